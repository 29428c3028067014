/** Names shared by the edit lease's server side (lib/leases/edit.ts) and the correction form in the browser. */
export const EDIT_LEASE_TTL_MS = 60_000;

export function editLeaseResource(intentId: string): string {
  return `intent:${intentId.toLowerCase()}:edit`;
}

const EDIT_LEASE = /^intent:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:edit$/i;

/** A reviewer's edit lease on an intent, in any spelling of the id. */
export function isEditLeaseResource(resource: string): boolean {
  return EDIT_LEASE.test(resource);
}
