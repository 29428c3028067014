import { intentIdSchema, parseInput } from '@/lib/intents/schemas';
import { EDIT_LEASE_TTL_MS, editLeaseResource } from './edit-names';
import { LeaseNotHeldError } from './errors';
import { tokenSchema } from './schemas';
import { leaseBackend } from './service';

/**
 * A reviewer's edit lease on an intent: taken when they start a correction, renewed while the form is open,
 * released when they leave. It informs, it does not forbid: others see "being edited by X until hh:mm" and may
 * still apply a correction — the version check protects both.
 */
export { EDIT_LEASE_TTL_MS, editLeaseResource };

export type EditLease = { held: true; owner: string; token: number; expiresAt: string } | { held: false; owner: string; expiresAt: string };

export async function takeEditLease(intentId: unknown, owner: string): Promise<EditLease> {
  const id = parseInput(intentIdSchema, intentId, 'intentId');
  const result = await leaseBackend().acquire(editLeaseResource(id), owner, EDIT_LEASE_TTL_MS);
  return result.acquired ? { held: true, owner, token: result.token, expiresAt: result.expiresAt } : { held: false, owner: result.owner, expiresAt: result.expiresAt };
}

export async function renewEditLease(intentId: unknown, token: unknown, owner: string): Promise<{ expiresAt: string }> {
  const id = parseInput(intentIdSchema, intentId, 'intentId');
  const t = parseInput(tokenSchema, token, 'token');
  const result = await leaseBackend().refresh(editLeaseResource(id), owner, t, EDIT_LEASE_TTL_MS);
  if (!result.refreshed) throw new LeaseNotHeldError(editLeaseResource(id), owner, t);
  return { expiresAt: result.expiresAt };
}

export async function releaseEditLease(intentId: unknown, token: unknown, owner: string): Promise<{ released: boolean }> {
  const id = parseInput(intentIdSchema, intentId, 'intentId');
  const t = parseInput(tokenSchema, token, 'token');
  return { released: await leaseBackend().release(editLeaseResource(id), owner, t) };
}

/** Who edits the intent now, if anyone (for the form of everyone else). */
export async function currentEditLease(intentId: unknown): Promise<{ owner: string; expiresAt: string } | null> {
  const id = parseInput(intentIdSchema, intentId, 'intentId');
  const [lease] = await leaseBackend().live(1, editLeaseResource(id));
  return lease ? { owner: lease.owner, expiresAt: lease.expiresAt } : null;
}
