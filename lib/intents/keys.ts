import type { SeriesKey } from '@/lib/contention/series';
import type { IntentStatus } from '@/lib/shared/intent-states';

/**
 * TanStack Query keys for intents, one factory for the pages, the server prefetch and the live feed. Invalidate by
 * prefix: `intentKeys.all` refreshes everything about intents, `intentKeys.detail(id)` the intent with its audit
 * trail and conflicts.
 */
export type IntentListFilters = {
  status: IntentStatus | null;
  q: string;
  /** Only this source; a time range on updated_at (ISO). */
  source: string | null;
  from: string | null;
  to: string | null;
  /** The intents behind a Contention figure (lib/search/intents.ts ContentionFilter): its series, operation and span. */
  contention: SeriesKey | null;
  contentionOperation: string | null;
  contentionFrom: string | null;
  contentionTo: string | null;
  /** The stuck view: not COMPLETED, unchanged for longer than this (`4h`). */
  stuck: string | null;
  /** `oldest`: the longest unchanged first; null: the newest change first. */
  order: 'oldest' | null;
  cursor: string | null;
  limit: number;
};

/** What the status counts depend on: everything but the status and the page. */
export type CountFilters = Pick<IntentListFilters, 'q' | 'source' | 'from' | 'to' | 'contention' | 'contentionOperation' | 'contentionFrom' | 'contentionTo' | 'stuck'>;

/** The counts with no search: exact, and carried by the live feed (lib/live). */
export const UNFILTERED_COUNTS: CountFilters = { q: '', source: null, from: null, to: null, contention: null, contentionOperation: null, contentionFrom: null, contentionTo: null, stuck: null };

/** The URL and API parameters a list or count filter is made of (besides status and paging), in one order. */
export const FILTER_PARAMS = ['q', 'source', 'from', 'to', 'contention', 'contentionOperation', 'contentionFrom', 'contentionTo', 'stuck'] as const;

export const intentKeys = {
  all: ['intents'] as const,
  lists: () => [...intentKeys.all, 'list'] as const,
  list: (filters: IntentListFilters) => [...intentKeys.lists(), filters] as const,
  counts: () => [...intentKeys.all, 'counts'] as const,
  count: (f: CountFilters) => [...intentKeys.counts(), Object.fromEntries(FILTER_PARAMS.map((k) => [k, f[k] ?? null]))] as const,
  details: () => [...intentKeys.all, 'detail'] as const,
  detail: (id: string) => [...intentKeys.details(), id] as const,
  conflicts: (id: string) => [...intentKeys.detail(id), 'conflicts'] as const,
  timeline: (id: string) => [...intentKeys.detail(id), 'timeline'] as const,
};
