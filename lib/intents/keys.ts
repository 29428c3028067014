import type { IntentStatus } from './state-machine';

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
  cursor: string | null;
  limit: number;
};

/** What the status counts depend on: everything but the status and the page. */
export type CountFilters = Pick<IntentListFilters, 'q' | 'source' | 'from' | 'to'>;

/** The counts with no search: exact, and carried by the live feed (lib/live). */
export const UNFILTERED_COUNTS: CountFilters = { q: '', source: null, from: null, to: null };

export const intentKeys = {
  all: ['intents'] as const,
  lists: () => [...intentKeys.all, 'list'] as const,
  list: (filters: IntentListFilters) => [...intentKeys.lists(), filters] as const,
  counts: () => [...intentKeys.all, 'counts'] as const,
  count: (f: CountFilters) => [...intentKeys.counts(), { q: f.q, source: f.source, from: f.from, to: f.to }] as const,
  details: () => [...intentKeys.all, 'detail'] as const,
  detail: (id: string) => [...intentKeys.details(), id] as const,
  audit: (id: string) => [...intentKeys.detail(id), 'audit'] as const,
  conflicts: (id: string) => [...intentKeys.detail(id), 'conflicts'] as const,
};
