import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { editLeaseResource } from '@/lib/leases/edit-names';
import { LeaseNotYoursError } from '@/lib/leases/errors';
import { maintainPartitions, partitionPolicy } from '@/lib/db/partitions';
import { leaseHistory, recentLeaseEvents, recordLeaseEvents } from '@/lib/leases/events';
import { acquireLease, listLeases, refreshLease, releaseLease, sweepLeases, type LeaseActor } from '@/lib/leases/service';
import { resetDatabase } from '../helpers';

/**
 * The lease manager's domain functions called directly (the doors' routes are thin over them): who sees tokens,
 * who may refresh or take what, the configured backend's sweep, and the event log's own functions (writing events
 * without a token or an expiry, reading one resource's, pruning past the retention).
 */
beforeEach(resetDatabase);

const serviceA: LeaseActor = { name: 'alice', userId: 'user-a', roles: ['operator'], via: 'token', credentialId: 'token-a' };
const serviceB: LeaseActor = { name: 'alice', userId: 'user-a', roles: ['operator'], via: 'token', credentialId: 'token-b' };
const viewer: LeaseActor = { name: 'vera', userId: 'user-v', roles: ['viewer'], via: 'session', credentialId: 'session-v' };

describe('the lease service', () => {
  it('a viewer sees who holds what but no token, in the leases and the events; a lease user sees the tokens', async () => {
    const granted = await acquireLease('orders/S-1', { owner: 'svc-a', ttlMs: 30_000 }, serviceA);
    await acquireLease('orders/S-2', { owner: 'svc-a', ttlMs: 30_000 }, serviceA);
    const seen = await listLeases({ resource: 'orders/S-1' }, viewer);
    expect(seen.leases).toEqual([expect.objectContaining({ resource: 'orders/S-1', owner: 'svc-a', token: null })]);
    expect(seen.events).toEqual([expect.objectContaining({ resource: 'orders/S-1', event: 'acquired', token: null })]);
    const used = await listLeases({ resource: 'orders/S-1' }, serviceA);
    expect(used.leases[0].token).toBe(granted.token);
    expect(used.events[0].token).toBe(granted.token);
    // Without a resource, every resource's events.
    expect((await listLeases({}, serviceA)).events.map((e) => e.resource).sort()).toEqual(['orders/S-1', 'orders/S-2']);
  });

  it('another API token of the same user may neither refresh nor release the lease: 403 lease_not_yours, the lease unchanged', async () => {
    const granted = await acquireLease('orders/S-3', { owner: 'svc-a', ttlMs: 30_000 }, serviceA);
    await expect(refreshLease('orders/S-3', { owner: 'svc-a', token: granted.token, ttlMs: 60_000 }, serviceB)).rejects.toBeInstanceOf(LeaseNotYoursError);
    await expect(releaseLease('orders/S-3', { owner: 'svc-a', token: granted.token }, serviceB)).rejects.toBeInstanceOf(LeaseNotYoursError);
    const [lease] = (await listLeases({ resource: 'orders/S-3' }, serviceA)).leases;
    expect(lease).toMatchObject({ owner: 'svc-a', token: granted.token, expiresAt: granted.expiresAt });
    expect(await releaseLease('orders/S-3', { owner: 'svc-a', token: granted.token }, serviceA)).toEqual({ released: true });
  });

  it('an edit lease is taken only under the caller’s own name', async () => {
    const resource = editLeaseResource('00000000-0000-4000-8000-000000000001');
    await expect(acquireLease(resource, { owner: 'someone-else', ttlMs: 30_000 }, serviceA)).rejects.toBeInstanceOf(LeaseNotYoursError);
    expect(await leaseHistory(resource)).toEqual([]);
    expect(await acquireLease(resource, { owner: 'alice', ttlMs: 30_000 }, serviceA)).toMatchObject({ acquired: true });
  });

  it('the sweep of the configured backend clears a lease whose time ran out, and only that one', async () => {
    await acquireLease('orders/S-4', { owner: 'svc-a', ttlMs: 30_000 }, serviceA);
    await acquireLease('orders/S-5', { owner: 'svc-a', ttlMs: 30_000 }, serviceA);
    await db().$executeRaw`UPDATE leases SET expires_at = now() - interval '1 second' WHERE resource = 'orders/S-4'`;
    expect(await sweepLeases()).toBe(1);
    expect((await listLeases({}, serviceA)).leases.map((l) => l.resource)).toEqual(['orders/S-5']);
    expect((await leaseHistory('orders/S-4')).map((e) => e.event)).toEqual(['acquired', 'expired']);
  });
});

describe('the lease event log', () => {
  it('writes nothing for no events; an event without a token or an expiry reads back with nulls', async () => {
    await recordLeaseEvents('redis', []);
    expect(await recentLeaseEvents({ limit: 10 })).toEqual([]);
    await recordLeaseEvents('redis', [{ resource: 'orders/E-1', event: 'released', owner: 'svc-a', actor: 'system', token: null, expiresAt: null }]);
    expect(await recentLeaseEvents({ limit: 10, resource: 'orders/E-1' })).toEqual([
      expect.objectContaining({ resource: 'orders/E-1', backend: 'redis', event: 'released', holder: null, token: null, expiresAt: null }),
    ]);
  });

  it('keeps the last seven days: the day partitions older than that are retired, nothing newer', async () => {
    const event = (resource: string) => ({ resource, event: 'refreshed' as const, owner: 'svc-a', actor: 'system', token: 1, expiresAt: null });
    await recordLeaseEvents('postgres', [event('orders/old'), event('orders/new')]);
    // The day eight days back gets its partition, and the old event moves into it.
    await db().$queryRaw`SELECT "bridge_partitions_cover"('lease_events'::regclass, now() - interval '8 days', now())::text`;
    const [{ partition }] = await db().$queryRaw<{ partition: string }[]>`
      UPDATE lease_events SET at = now() - interval '8 days' WHERE resource = 'orders/old' RETURNING tableoid::regclass::text AS partition`;
    const report = await maintainPartitions(partitionPolicy('lease_events'));
    expect(report.retired).toContain(partition);
    const [{ gone }] = await db().$queryRaw<{ gone: boolean }[]>`SELECT to_regclass(${partition}) IS NULL AS gone`;
    expect(gone).toBe(true);
    expect((await recentLeaseEvents({ limit: 10 })).map((e) => e.resource)).toEqual(['orders/new']);
  });
});
