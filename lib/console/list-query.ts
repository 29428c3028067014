import { intentsHref } from '@/lib/console/filters';
import type { IntentListFilters } from '@/lib/intents/keys';

/** The list's filters as the query of an intent's URL (`/intents/<id>?status=…&q=…`), so its page can go back to them. */
export function listQuery(filters: Partial<Omit<IntentListFilters, 'limit'>>): string {
  const href = intentsHref({ ...filters, cursor: null });
  const at = href.indexOf('?');
  return at < 0 ? '' : href.slice(at);
}
