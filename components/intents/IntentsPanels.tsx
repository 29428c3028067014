import { dehydrate, HydrationBoundary, QueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { intentsHref } from '@/lib/console/filters';
import { listInput } from '@/lib/console/list-nav';
import { listIntents } from '@/lib/intents/queries';
import { FILTER_PARAMS, intentKeys, type IntentListFilters } from '@/lib/intents/keys';
import { countsUnder, oldestWaiting, type ResolvedSearch } from '@/lib/search/intents';
import { STUCK_CHOICES } from '@/lib/search/stuck';
import { shortId } from '@/lib/console/ids';
import styles from './intents.module.css';
import { IntentsTable } from './IntentsTable';
import { StatusFilterBar } from './StatusFilterBar';

/**
 * Server panels of the Intents page: each prefetches its own query with the domain functions (same keys and data
 * shape as the browser's fetch of the JSON API), so the page streams each panel as soon as its query answers.
 */
/** `search`: what the page made of `filters.q`, when it resolved it (the panels then do not ask again). */
type Resolved = { search: ResolvedSearch } | undefined;

export async function StatusCountsPanel({ filters, resolved }: { filters: IntentListFilters; resolved: Resolved }) {
  const queryClient = new QueryClient();
  await queryClient.prefetchQuery({
    queryKey: intentKeys.count(filters),
    queryFn: () => countsUnder({ ...Object.fromEntries(FILTER_PARAMS.map((k) => [k, filters[k]])), q: filters.q }, { search: resolved?.search }),
  });
  return (
    <HydrationBoundary state={dehydrate(queryClient)}>
      <StatusFilterBar filters={filters} searchKind={resolved?.search.kind ?? null} />
    </HydrationBoundary>
  );
}

export async function IntentsListPanel({ filters, resolved, canBulk, lockTimeoutMs }: { filters: IntentListFilters; resolved: Resolved; canBulk: boolean; lockTimeoutMs?: number }) {
  const queryClient = new QueryClient();
  await queryClient.prefetchQuery({
    queryKey: intentKeys.list(filters),
    queryFn: () =>
      listIntents(listInput(filters), resolved),
  });
  return (
    <HydrationBoundary state={dehydrate(queryClient)}>
      <IntentsTable filters={filters} canBulk={canBulk} lockTimeoutMs={lockTimeoutMs} />
    </HydrationBoundary>
  );
}

/**
 * How long the longest-waiting intent (of the status tab, or of all) has gone unchanged, with the views that go
 * with it: the stuck view (unchanged for longer than a choice of durations, oldest first) and the list's order.
 */
export async function WaitingPanel({ filters }: { filters: IntentListFilters }) {
  const oldest = await oldestWaiting(filters.status);
  const view = { ...filters, cursor: null };
  // The oldest is read over the whole status (one index lookup), not over a search: said so when one narrows the list.
  const narrowed = Boolean(filters.q || filters.source || filters.from || filters.to || filters.contention);
  // COMPLETED and FAILED intents wait for nothing (a FAILED one waits for an operator, not for the pipeline).
  const final = filters.status === 'COMPLETED' || filters.status === 'FAILED';
  const scope = `${filters.status ? ` in ${filters.status}` : ''}${narrowed ? (filters.status ? `, all of it, not only this search` : ', not only this search') : ''}`;
  return (
    <div className={styles.waitingBar} data-testid="oldest-waiting">
      {oldest ? (
        <span>
          {final ? 'Oldest' : 'Oldest waiting'}
          {scope}: <Link href={`/intents/${oldest.id}`} className="mono">{shortId(oldest.id)}</Link>, {oldest.status}, last changed <RelativeTime iso={oldest.since} />
        </span>
      ) : (
        <span className="muted">{final ? `No intent is ${filters.status}.` : `Nothing waiting${filters.status ? ` in ${filters.status}` : ''}.`}</span>
      )}
      <nav aria-label="Stuck intents" className={styles.waitingLinks}>
        <span className="muted">Stuck for more than</span>
        {STUCK_CHOICES.map((d) => (
          <Link key={d} href={intentsHref({ ...view, stuck: d, order: 'oldest' })} aria-current={filters.stuck === d ? 'page' : undefined} className="btn btn-sm">
            {d}
          </Link>
        ))}
        {filters.stuck && (
          <Link href={intentsHref({ ...view, stuck: null, order: null })} className="btn btn-sm btn-ghost">
            All intents
          </Link>
        )}
      </nav>
      <nav aria-label="Order" className={styles.waitingLinks}>
        <Link href={intentsHref({ ...view, order: null })} aria-current={filters.order ? undefined : 'page'} className="btn btn-sm">
          Newest first
        </Link>
        <Link href={intentsHref({ ...view, order: 'oldest' })} aria-current={filters.order === 'oldest' ? 'page' : undefined} className="btn btn-sm">
          Oldest first
        </Link>
      </nav>
    </div>
  );
}
