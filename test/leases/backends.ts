import { workerRedisUrl } from '../worker';
import { PostgresLeases } from '@/lib/leases/postgres';
import { RedisLeases } from '@/lib/leases/redis';
import { redisClient } from '@/lib/leases/redis-client';
import type { LeaseBackend, LeaseEvent } from '@/lib/leases/types';

/** The backends the contract suite runs against: Postgres always, Redis when the run has one (test/global-setup.ts). */
export const redisUrl = workerRedisUrl();

export const BACKENDS: { name: string; make: () => LeaseBackend; skip: boolean }[] = [
  { name: 'postgres', make: () => new PostgresLeases(), skip: false },
  { name: 'redis', make: () => new RedisLeases(redisUrl), skip: !redisUrl },
];

/** Empties the test Redis (its keys belong to this run only). */
export async function flushRedis(): Promise<void> {
  if (redisUrl) await (await redisClient(redisUrl)).flushDb();
}


export type Grant = { token: number; owner: string; start: number; end: number };

/**
 * Each grant of a resource from its event log, as [start, end): from `acquired` to the release, or to the last
 * expiry it was given (acquired or refreshed) when it ran out. Mutual exclusion holds when, in token order, every
 * grant starts no earlier than the previous one ended.
 */
export function grantsFrom(events: LeaseEvent[]): Grant[] {
  const grants = new Map<number, Grant>();
  for (const e of events) {
    if (e.token === null) continue;
    if (e.event === 'acquired') grants.set(e.token, { token: e.token, owner: e.owner!, start: Date.parse(e.at), end: Date.parse(e.expiresAt!) });
    const g = grants.get(e.token);
    if (!g) continue;
    if (e.event === 'refreshed') g.end = Math.max(g.end, Date.parse(e.expiresAt!));
    if (e.event === 'released') g.end = Date.parse(e.expiresAt!);
  }
  return [...grants.values()].sort((a, b) => a.token - b.token);
}

export function overlaps(grants: Grant[]): { earlier: Grant; later: Grant }[] {
  const found: { earlier: Grant; later: Grant }[] = [];
  for (let i = 1; i < grants.length; i++) if (grants[i].start < grants[i - 1].end) found.push({ earlier: grants[i - 1], later: grants[i] });
  return found;
}
