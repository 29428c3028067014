import Link from 'next/link';
import { intentsHref } from '@/lib/console/filters';
import { operationLabel, SERIES } from '@/lib/contention/series';
import type { IntentListFilters } from '@/lib/intents/keys';
import { formatUtc } from '@/components/ui/time';
import styles from './intents.module.css';

type ContentionFilter = Pick<IntentListFilters, 'contention' | 'contentionOperation' | 'contentionFrom' | 'contentionTo'>;

/** "lock timeouts in a status change, 2026-12-03 10:05 UTC to 11:05 UTC": what the Contention figure was about. */
export function describeContentionFilter(f: ContentionFilter): string | null {
  if (!f.contention) return null;
  const what = SERIES[f.contention].label.toLowerCase();
  const op = f.contentionOperation ? ` in a ${operationLabel(f.contentionOperation).toLowerCase()}` : '';
  const from = f.contentionFrom ? formatUtc(f.contentionFrom, { seconds: false }) : null;
  // The end on the same day needs no date again.
  const to = f.contentionTo ? formatUtc(f.contentionTo, { seconds: false }) : null;
  const end = to && from && to.slice(0, 10) === from.slice(0, 10) ? to.slice(11) : to;
  const span = from && end ? `, ${from} to ${end}` : from ? `, since ${from}` : end ? `, until ${end}` : '';
  return `${what}${op}${span}`;
}

/**
 * The Intents page opened from a Contention figure: says which figure, and removes that filter (keeping the rest).
 * The outcomes are kept per intent for a week (lib/intents/outcomes.ts), so an older shared link lists nothing.
 */
export function ContentionFilterChip({ filters }: { filters: IntentListFilters }) {
  const text = describeContentionFilter(filters);
  if (!text) return null;
  return (
    <p className={styles.contentionFilter} data-testid="contention-filter" role="status">
      <span>
        Only intents that met <strong>{text}</strong> (from the Contention page).
      </span>
      <Link href={intentsHref({ ...filters, cursor: null, contention: null, contentionOperation: null, contentionFrom: null, contentionTo: null })} className="btn btn-ghost btn-sm">
        Remove this filter
      </Link>
    </p>
  );
}
