import type { IntentStatus } from './state-machine';

/**
 * TanStack Query keys for intents, one factory for the pages, the server prefetch and the live feed. Invalidate by
 * prefix: `intentKeys.all` refreshes everything about intents, `intentKeys.detail(id)` the intent with its audit
 * trail and conflicts.
 */
export type IntentListFilters = { status: IntentStatus | null; q: string; cursor: string | null; limit: number };

export const intentKeys = {
  all: ['intents'] as const,
  lists: () => [...intentKeys.all, 'list'] as const,
  list: (filters: IntentListFilters) => [...intentKeys.lists(), filters] as const,
  counts: () => [...intentKeys.all, 'counts'] as const,
  count: (q: string) => [...intentKeys.counts(), { q }] as const,
  details: () => [...intentKeys.all, 'detail'] as const,
  detail: (id: string) => [...intentKeys.details(), id] as const,
  audit: (id: string) => [...intentKeys.detail(id), 'audit'] as const,
  conflicts: (id: string) => [...intentKeys.detail(id), 'conflicts'] as const,
};
