import type { LeaseEvent, LiveLease } from '@/lib/leases/types';
import { editLeaseResource } from '@/lib/leases/edit-names';
import { getJson, postJson } from './api-client';
import { lockKeys } from './locks-client';

/** Browser-side reads and the exit-time release of leases (TanStack Query), with typed keys. */
export type LeasesAnswer = { backend: string; leases: LiveLease[]; events: LeaseEvent[] };

/** Under the Locks page's keys: an unblock there refreshes the leases beside the Postgres locks too. */
export const leaseKeys = {
  all: [...lockKeys.all, 'leases'] as const,
};

export const fetchLeases = () => getJson<LeasesAnswer>('/api/leases?limit=50');

/**
 * Releases an intent's edit lease with a request that outlives the page (`keepalive`): on leaving the page a server
 * action may not get out, this request to the same domain function does. Best effort: a failure is ignored.
 */
export function releaseEditLeaseOnExit(intentId: string, owner: string, token: number): void {
  void postJson(`/api/leases/${encodeURIComponent(editLeaseResource(intentId))}/release`, { owner, token }, { keepalive: true }).catch(() => undefined);
}
