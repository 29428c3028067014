import { env } from '@/lib/env';
import { parseInput } from '@/lib/intents/schemas';
import { LeaseDeniedError, LeaseNotHeldError } from './errors';
import { recentLeaseEvents } from './events';
import { PostgresLeases } from './postgres';
import { RedisLeases } from './redis';
import { acquireBodySchema, leaseResourceSchema, listLeasesSchema, refreshBodySchema, releaseBodySchema } from './schemas';
import type { LeaseBackend, LeaseEvent, LeaseGranted, LiveLease } from './types';

/**
 * The lease manager's domain functions: the API's route handlers and the console's server actions call these (one
 * implementation, two doors). They validate, pick the configured backend, and turn refusals into typed errors.
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

export type LeaseOptions = { backend?: LeaseBackend };

export async function acquireLease(resource: unknown, input: unknown, options: LeaseOptions = {}): Promise<LeaseGranted> {
  const r = parseInput(leaseResourceSchema, resource, 'resource');
  const { owner, ttlMs } = parseInput(acquireBodySchema, input);
  const result = await (options.backend ?? leaseBackend()).acquire(r, owner, ttlMs);
  if (!result.acquired) throw new LeaseDeniedError(r, result.owner, result.expiresAt);
  return result;
}

export async function refreshLease(resource: unknown, input: unknown, options: LeaseOptions = {}): Promise<{ refreshed: true; token: number; expiresAt: string }> {
  const r = parseInput(leaseResourceSchema, resource, 'resource');
  const { owner, token, ttlMs } = parseInput(refreshBodySchema, input);
  const result = await (options.backend ?? leaseBackend()).refresh(r, owner, token, ttlMs);
  if (!result.refreshed) throw new LeaseNotHeldError(r, owner, token);
  return { refreshed: true, token, expiresAt: result.expiresAt };
}

export async function releaseLease(resource: unknown, input: unknown, options: LeaseOptions = {}): Promise<{ released: true }> {
  const r = parseInput(leaseResourceSchema, resource, 'resource');
  const { owner, token } = parseInput(releaseBodySchema, input);
  if (!(await (options.backend ?? leaseBackend()).release(r, owner, token))) throw new LeaseNotHeldError(r, owner, token);
  return { released: true };
}

export async function listLeases(input: unknown, options: LeaseOptions = {}): Promise<{ backend: string; leases: LiveLease[]; events: LeaseEvent[] }> {
  const { limit, resource } = parseInput(listLeasesSchema, input, 'query');
  const backend = options.backend ?? leaseBackend();
  const [leases, events] = await Promise.all([backend.live(limit, resource), recentLeaseEvents({ limit, resource })]);
  return { backend: backend.name, leases, events };
}

/** One sweep of the configured backend (housekeeping runs it every LEASE_SWEEP_INTERVAL_MS). */
export function sweepLeases(options: LeaseOptions = {}): Promise<number> {
  return (options.backend ?? leaseBackend()).sweep();
}
