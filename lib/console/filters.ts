import { z } from 'zod';
import { INTENT_STATUSES } from '@/lib/intents/state-machine';
import type { IntentListFilters } from '@/lib/intents/keys';
import { isInstant } from '@/lib/search/instant';

/**
 * The Intents page's URL (`?status=&q=&source=&from=&to=&cursor=`): shareable, and parsed with Zod like any other input. A value
 * that does not parse is dropped rather than failing the page — a stale link still opens the list.
 */
export const PAGE_SIZE = 50;

const first = (v: unknown) => (Array.isArray(v) ? v[0] : v);

const isoOrNull = z
  .string()
  .trim()
  .max(40)
  .refine(isInstant)
  .nullable()
  .catch(null);

const urlFilters = z.object({
  status: z.preprocess(first, z.enum(INTENT_STATUSES).nullable().catch(null)).default(null),
  q: z.preprocess(first, z.string().trim().max(200).catch('')).default(''),
  cursor: z.preprocess(first, z.string().regex(/^[A-Za-z0-9_-]{1,500}$/).nullable().catch(null)).default(null),
  source: z.preprocess(first, z.string().trim().min(1).max(255).nullable().catch(null)).default(null),
  from: z.preprocess(first, isoOrNull).default(null),
  to: z.preprocess(first, isoOrNull).default(null),
});

export function parseIntentFilters(params: Record<string, string | string[] | undefined>): IntentListFilters {
  const parsed = urlFilters.parse(params);
  // A range that ends before it starts is dropped whole rather than answering an empty list.
  const range = parsed.from && parsed.to && Date.parse(parsed.from) > Date.parse(parsed.to) ? { from: null, to: null } : { from: parsed.from, to: parsed.to };
  return { status: parsed.status, q: parsed.q, source: parsed.source, ...range, cursor: parsed.cursor, limit: PAGE_SIZE };
}

/** The URL for a filter combination; a new status or search always starts from the newest page. */
export function intentsHref(filters: Partial<Omit<IntentListFilters, 'limit'>>): string {
  const params = new URLSearchParams();
  if (filters.status) params.set('status', filters.status);
  if (filters.q) params.set('q', filters.q);
  if (filters.source) params.set('source', filters.source);
  if (filters.from) params.set('from', filters.from);
  if (filters.to) params.set('to', filters.to);
  if (filters.cursor) params.set('cursor', filters.cursor);
  const qs = params.toString();
  return qs ? `/intents?${qs}` : '/intents';
}
