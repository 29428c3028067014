/** Names shared by the edit lease's server side (lib/leases/edit.ts) and the correction form in the browser. */
export const EDIT_LEASE_TTL_MS = 60_000;

export function editLeaseResource(intentId: string): string {
  return `intent:${intentId.toLowerCase()}:edit`;
}
