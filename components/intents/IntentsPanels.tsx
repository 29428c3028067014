import { dehydrate, HydrationBoundary, QueryClient } from '@tanstack/react-query';
import { listIntents } from '@/lib/intents/queries';
import { FILTER_PARAMS, intentKeys, type IntentListFilters } from '@/lib/intents/keys';
import { countsUnder, type ResolvedSearch } from '@/lib/search/intents';
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
      listIntents({
        status: filters.status ?? undefined,
        q: filters.q || undefined,
        source: filters.source ?? undefined,
        from: filters.from ?? undefined,
        to: filters.to ?? undefined,
        contention: filters.contention ?? undefined,
        contentionOperation: filters.contentionOperation ?? undefined,
        contentionFrom: filters.contentionFrom ?? undefined,
        contentionTo: filters.contentionTo ?? undefined,
        cursor: filters.cursor ?? undefined,
        limit: filters.limit,
      }, resolved),
  });
  return (
    <HydrationBoundary state={dehydrate(queryClient)}>
      <IntentsTable filters={filters} canBulk={canBulk} lockTimeoutMs={lockTimeoutMs} />
    </HydrationBoundary>
  );
}
