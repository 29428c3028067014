import { intentIdSchema } from '@/lib/shared/fields';
import { parseInput } from '@/lib/shared/validation';
import { EDIT_LEASE_TTL_MS, editLeaseResource } from './edit-names';
import { LeaseNotHeldError, LeaseNotYoursError } from './errors';
import { tokenSchema } from './schemas';
import { leaseBackend, leaseCaller, type LeaseActor } from './service';

/**
 * A reviewer's edit lease on an intent: taken when they start a correction, renewed while the form is open,
 * released when they leave. It informs, it does not forbid: others see "being edited by X until hh:mm" and may
 * still apply a correction — the version check protects both. The lease is held under the user's own name and
 * bound to that user, so only they renew or release it (an admin may release it, docs/LEASES.md).
 */
export { EDIT_LEASE_TTL_MS, editLeaseResource };

/**
 * A lease someone holds, as another caller sees it. `mine`: held under the caller's own name — the same user editing
 * in another tab or window, whom the form names as such rather than as somebody else.
 */
export type HeldEditLease = { owner: string; actor: string | null; expiresAt: string; mine: boolean };
export type EditLease = { held: true; owner: string; token: number; expiresAt: string } | { held: false; owner: string; expiresAt: string; mine: boolean };

export async function takeEditLease(intentId: unknown, actor: LeaseActor): Promise<EditLease> {
  const id = parseInput(intentIdSchema, intentId, 'intentId');
  const result = await leaseBackend().acquire(editLeaseResource(id), actor.name, EDIT_LEASE_TTL_MS, leaseCaller(actor));
  return result.acquired ? { held: true, owner: actor.name, token: result.token, expiresAt: result.expiresAt } : { held: false, owner: result.owner, expiresAt: result.expiresAt, mine: result.owner === actor.name };
}

export async function renewEditLease(intentId: unknown, token: unknown, actor: LeaseActor): Promise<{ expiresAt: string }> {
  const id = parseInput(intentIdSchema, intentId, 'intentId');
  const t = parseInput(tokenSchema, token, 'token');
  const resource = editLeaseResource(id);
  const result = await leaseBackend().refresh(resource, actor.name, t, EDIT_LEASE_TTL_MS, leaseCaller(actor));
  if (result.refreshed) return { expiresAt: result.expiresAt };
  throw result.reason === 'not_yours'
    ? new LeaseNotYoursError(`The edit lease on intent ${id} was taken by another caller.`, { resource, owner: actor.name })
    : new LeaseNotHeldError(resource, actor.name, t);
}

export async function releaseEditLease(intentId: unknown, token: unknown, actor: LeaseActor): Promise<{ released: boolean }> {
  const id = parseInput(intentIdSchema, intentId, 'intentId');
  const t = parseInput(tokenSchema, token, 'token');
  return { released: (await leaseBackend().release(editLeaseResource(id), actor.name, t, leaseCaller(actor))).released };
}

/**
 * Who edits the intent now, if anyone (for the form of everyone else): the owner, the user who took it, and whether
 * that is the viewer (`viewer`, their name) in another tab.
 */
export async function currentEditLease(intentId: unknown, viewer?: string): Promise<HeldEditLease | null> {
  const id = parseInput(intentIdSchema, intentId, 'intentId');
  const [lease] = await leaseBackend().live(1, editLeaseResource(id));
  return lease ? { owner: lease.owner, actor: lease.actor, expiresAt: lease.expiresAt, mine: viewer !== undefined && lease.owner === viewer } : null;
}
