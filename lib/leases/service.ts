import { can } from '@/lib/auth/permissions';
import type { AuthActor } from '@/lib/auth/types';
import { env } from '@/lib/env';
import { parseInput } from '@/lib/shared/validation';
import { isEditLeaseResource } from './edit-names';
import { LeaseDeniedError, LeaseNotHeldError, LeaseNotYoursError } from './errors';
import { recentLeaseEvents } from './events';
import { PostgresLeases } from './postgres';
import { RedisLeases } from './redis';
import { acquireBodySchema, leaseResourceSchema, listLeasesSchema, refreshBodySchema, releaseBodySchema } from './schemas';
import type { LeaseBackend, LeaseCaller, LeaseEvent, LeaseGranted, LiveLease, NotDone } from './types';

/**
 * The lease manager's domain functions: the API's route handlers and the console's server actions call these (one
 * implementation, two doors). They validate, pick the configured backend, bind each lease to the credential that
 * took it, and turn refusals into typed errors.
 */
const globalForLeases = globalThis as unknown as { bridgeLeaseBackend?: LeaseBackend };

/** The backend configured by LEASE_BACKEND (postgres unless told otherwise). */
export function leaseBackend(): LeaseBackend {
  if (!globalForLeases.bridgeLeaseBackend) {
    const e = env();
    globalForLeases.bridgeLeaseBackend = e.LEASE_BACKEND === 'redis' ? new RedisLeases(e.REDIS_URL!) : new PostgresLeases();
  }
  return globalForLeases.bridgeLeaseBackend;
}

/**
 * Drops the backend chosen so far: the next leaseBackend() builds the one the configuration names then. A server
 * chooses once; tests that switch LEASE_BACKEND call this (after forgetEnv) so that the switch, and its undoing, take
 * effect. A Redis backend's connection is closeRedisClients' to close.
 */
export function forgetLeaseBackend(): void {
  globalForLeases.bridgeLeaseBackend = undefined;
}

/** Who the caller is, to a lease: who may do what is in docs/LEASES.md ("Who may do what"). */
export type LeaseActor = Pick<AuthActor, 'name' | 'userId' | 'roles' | 'via' | 'credentialId'>;

/**
 * The credential a lease is bound to: the API token for a token's call (two services of one user, each with its
 * token, cannot touch each other's leases), the user for a signed-in session (which rotates, and may be one of
 * several tabs or browsers of that user).
 */
export function leaseCaller(actor: LeaseActor): LeaseCaller {
  return {
    credential: actor.via === 'token' ? `token:${actor.credentialId}` : `user:${actor.userId}`,
    actor: actor.name,
    mayReleaseAny: can(actor, 'leases.release_any'),
  };
}

export type LeaseOptions = { backend?: LeaseBackend };

function notDone(reason: NotDone, resource: string, owner: string, token: number): Error {
  return reason === 'not_yours'
    ? new LeaseNotYoursError(`The lease on ${resource} held by ${owner} was taken by another caller: only the user or API token that acquired it may refresh or release it.`, { resource, owner })
    : new LeaseNotHeldError(resource, owner, token);
}

/**
 * A reviewer's edit lease (`intent:<id>:edit`) says who is correcting the intent; its owner is always a user's own
 * name, so nobody can take one in someone else's name (the console's form does the same, lib/leases/edit.ts).
 */
function checkOwner(resource: string, owner: string, actor: LeaseActor): void {
  if (isEditLeaseResource(resource) && owner !== actor.name) {
    throw new LeaseNotYoursError(`An edit lease is held under its user's own name: ${actor.name} may take ${resource} as "${actor.name}", not as "${owner}".`, { resource, owner });
  }
}

export async function acquireLease(resource: unknown, input: unknown, actor: LeaseActor, options: LeaseOptions = {}): Promise<LeaseGranted> {
  const r = parseInput(leaseResourceSchema, resource, 'resource');
  const { owner, ttlMs } = parseInput(acquireBodySchema, input);
  checkOwner(r, owner, actor);
  const result = await (options.backend ?? leaseBackend()).acquire(r, owner, ttlMs, leaseCaller(actor));
  if (!result.acquired) throw new LeaseDeniedError(r, result.owner, result.expiresAt);
  return result;
}

export async function refreshLease(resource: unknown, input: unknown, actor: LeaseActor, options: LeaseOptions = {}): Promise<{ refreshed: true; token: number; expiresAt: string }> {
  const r = parseInput(leaseResourceSchema, resource, 'resource');
  const { owner, token, ttlMs } = parseInput(refreshBodySchema, input);
  const result = await (options.backend ?? leaseBackend()).refresh(r, owner, token, ttlMs, leaseCaller(actor));
  if (!result.refreshed) throw notDone(result.reason, r, owner, token);
  return { refreshed: true, token, expiresAt: result.expiresAt };
}

export async function releaseLease(resource: unknown, input: unknown, actor: LeaseActor, options: LeaseOptions = {}): Promise<{ released: true }> {
  const r = parseInput(leaseResourceSchema, resource, 'resource');
  const { owner, token } = parseInput(releaseBodySchema, input);
  const result = await (options.backend ?? leaseBackend()).release(r, owner, token, leaseCaller(actor));
  if (!result.released) throw notDone(result.reason, r, owner, token);
  return { released: true };
}

/** Tokens are for the callers who may write with them; everyone else (viewers) sees who holds what, not the token. */
function withoutTokens<T extends { token: number | null }>(rows: T[]): T[] {
  return rows.map((row) => ({ ...row, token: null }));
}

export async function listLeases(input: unknown, actor: Pick<AuthActor, 'roles'>, options: LeaseOptions = {}): Promise<{ backend: string; leases: LiveLease[]; events: LeaseEvent[] }> {
  const { limit, resource } = parseInput(listLeasesSchema, input, 'query');
  const backend = options.backend ?? leaseBackend();
  const [leases, events] = await Promise.all([backend.live(limit, resource), recentLeaseEvents({ limit, resource })]);
  const seesTokens = can(actor, 'leases.use');
  return { backend: backend.name, leases: seesTokens ? leases : withoutTokens(leases), events: seesTokens ? events : withoutTokens(events) };
}

/** One sweep of the configured backend (housekeeping runs it every LEASE_SWEEP_INTERVAL_MS). */
export function sweepLeases(options: LeaseOptions = {}): Promise<number> {
  return (options.backend ?? leaseBackend()).sweep();
}
