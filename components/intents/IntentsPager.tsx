import Link from 'next/link';
import { intentsHref } from '@/lib/console/filters';
import type { IntentListFilters } from '@/lib/intents/keys';
import styles from './intents.module.css';

/** Under the list: how many are shown in which order, back to the first page, and on to the next. */
export function IntentsPager({ filters, base, shown, nextCursor }: { filters: IntentListFilters; base: Parameters<typeof intentsHref>[0]; shown: number; nextCursor: string | null }) {
  return (
    <nav aria-label="Pages" className={styles.pager}>
      <span className="muted">
        {shown} shown · {filters.order === 'oldest' ? 'oldest change first' : 'newest change first'}
        {filters.stuck ? ` · unchanged for more than ${filters.stuck}, not COMPLETED` : ''}
        {filters.cursor ? (filters.order === 'oldest' ? ' · a later page' : ' · older page') : ''}
      </span>
      <span className={styles.pagerLinks}>
        {filters.cursor && (
          <Link href={intentsHref(base)} className="btn btn-sm">
            {filters.order === 'oldest' ? '← Oldest' : '← Newest'}
          </Link>
        )}
        {nextCursor ? (
          <Link href={intentsHref({ ...base, cursor: nextCursor })} className="btn btn-sm" rel="next">
            Next page →
          </Link>
        ) : (
          <span className="muted">End of list</span>
        )}
      </span>
    </nav>
  );
}
