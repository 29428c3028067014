import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { leaseHistory } from '@/lib/leases/events';
import { resetDatabase } from '../helpers';
import { BACKENDS, flushRedis, grantsFrom, overlaps } from './backends';
import { eventually } from '../wait';

/** One contract, every backend: the same suite runs against Postgres and Redis. */
describe.each(BACKENDS)('lease contract: $name', ({ make, skip }) => {
  beforeEach(async ({ skip: skipTest }) => {
    if (skip) skipTest('no Redis in this run (see the warning at the start of the run)');
    await resetDatabase();
    await flushRedis();
  });

  it('20 concurrent acquirers: exactly one holder at any time, by the event log; tokens strictly increase', async () => {
    const leases = make();
    const resource = 'contract:twenty';
    const grantsWanted = 20;
    let granted = 0;
    const tokens: number[] = [];
    const worker = async (n: number) => {
      const owner = `worker-${n}`;
      while (granted < grantsWanted) {
        const result = await leases.acquire(resource, owner, 5_000);
        if (!result.acquired) continue;
        granted++;
        tokens.push(result.token);
        // While held, nobody else gets it.
        const other = await leases.acquire(resource, `${owner}-shadow`, 5_000);
        expect(other.acquired).toBe(false);
        expect(await leases.release(resource, owner, result.token)).toEqual({ released: true });
      }
    };
    await Promise.all(Array.from({ length: 20 }, (_, i) => worker(i)));

    expect(tokens.length).toBeGreaterThanOrEqual(grantsWanted);
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set(tokens).size).toBe(tokens.length);

    const events = await leaseHistory(resource);
    const grants = grantsFrom(events);
    expect(grants.map((g) => g.token)).toEqual(tokens);
    expect(overlaps(grants)).toEqual([]);
    expect(events.filter((e) => e.event === 'denied').length).toBeGreaterThan(0);
    expect(events.filter((e) => e.event === 'released').length).toBe(tokens.length);
  });

  it('denies at once, naming the holder and its expiry', async () => {
    const leases = make();
    const first = await leases.acquire('contract:deny', 'alice', 60_000);
    expect(first).toMatchObject({ acquired: true, token: 1 });
    const second = await leases.acquire('contract:deny', 'bob', 60_000);
    expect(second).toMatchObject({ acquired: false, owner: 'alice' });
    // Redis answers the holder's expiry from its remaining PTTL, so it may differ from the grant's by a millisecond.
    const expiry = (r: { expiresAt?: string }) => Date.parse(r.expiresAt ?? '');
    expect(Math.abs(expiry(second) - expiry(first))).toBeLessThanOrEqual(2);
    const events = await leaseHistory('contract:deny');
    expect(events.map((e) => [e.event, e.owner, e.holder])).toEqual([
      ['acquired', 'alice', null],
      ['denied', 'bob', 'alice'],
    ]);
  });

  it('a lease expires after its TTL by the server clock; the next acquire records the expiry and gets a higher token', async () => {
    const leases = make();
    // Long enough that bob's first try, right after, falls inside it even on a busy machine; then it runs out.
    const first = await leases.acquire('contract:ttl', 'alice', 2_000);
    if (!first.acquired) throw new Error('not acquired');
    expect((await leases.acquire('contract:ttl', 'bob', 150)).acquired).toBe(false);
    const second = await eventually('alice’s lease to run out', async () => {
      const r = await leases.acquire('contract:ttl', 'bob', 60_000);
      return r.acquired ? r : undefined;
    });
    expect(second.token).toBeGreaterThan(first.token);
    // The expired holder can neither refresh nor release any more.
    expect(await leases.refresh('contract:ttl', 'alice', first.token, 60_000)).toEqual({ refreshed: false, reason: 'not_held' });
    expect(await leases.release('contract:ttl', 'alice', first.token)).toEqual({ released: false, reason: 'not_held' });
    const events = await leaseHistory('contract:ttl');
    const expired = events.filter((e) => e.event === 'expired');
    expect(expired).toHaveLength(1);
    expect(expired[0]).toMatchObject({ owner: 'alice', token: first.token });
    expect(overlaps(grantsFrom(events))).toEqual([]);
  });

  it('release by a non-holder is refused: another owner, a stale token, twice', async () => {
    const leases = make();
    const a = await leases.acquire('contract:release', 'alice', 60_000);
    if (!a.acquired) throw new Error('not acquired');
    expect(await leases.release('contract:release', 'bob', a.token)).toEqual({ released: false, reason: 'not_held' });
    expect(await leases.release('contract:release', 'alice', a.token + 1)).toEqual({ released: false, reason: 'not_held' });
    expect((await leases.acquire('contract:release', 'bob', 60_000)).acquired).toBe(false);
    expect(await leases.release('contract:release', 'alice', a.token)).toEqual({ released: true });
    expect(await leases.release('contract:release', 'alice', a.token)).toEqual({ released: false, reason: 'not_held' });
    const b = await leases.acquire('contract:release', 'bob', 60_000);
    expect(b).toMatchObject({ acquired: true, token: a.token + 1 });
    // The old holder's token cannot release the new holder's lease, even under the same owner name.
    const c = await leases.acquire('contract:release-same', 'alice', 60_000);
    if (!c.acquired) throw new Error('not acquired');
    await leases.release('contract:release-same', 'alice', c.token);
    const d = await leases.acquire('contract:release-same', 'alice', 60_000);
    expect(await leases.release('contract:release-same', 'alice', c.token)).toEqual({ released: false, reason: 'not_held' });
    expect(d.acquired && (await leases.release('contract:release-same', 'alice', d.token))).toEqual({ released: true });
  });

  it('refresh extends the lease for its holder only', async () => {
    const leases = make();
    const a = await leases.acquire('contract:refresh', 'alice', 300);
    if (!a.acquired) throw new Error('not acquired');
    const refreshed = await leases.refresh('contract:refresh', 'alice', a.token, 60_000);
    if (!refreshed.refreshed) throw new Error('not refreshed');
    expect(Date.parse(refreshed.expiresAt)).toBeGreaterThan(Date.parse(a.expiresAt) + 50_000);
    expect(await leases.refresh('contract:refresh', 'bob', a.token, 60_000)).toEqual({ refreshed: false, reason: 'not_held' });
    expect(await leases.refresh('contract:refresh', 'alice', a.token + 1, 60_000)).toEqual({ refreshed: false, reason: 'not_held' });
    // Long past the original 300 ms TTL the lease is still alice's: the refresh moved its expiry.
    const live = await eventually('the refreshed lease in the live list', async () => (await leases.live(10)).find((l) => l.resource === 'contract:refresh'));
    expect(live).toMatchObject({ owner: 'alice', token: a.token, expiresAt: refreshed.expiresAt });
    expect((await leases.acquire('contract:refresh', 'bob', 1000)).acquired).toBe(false);
    const events = await leaseHistory('contract:refresh');
    expect(events.map((e) => e.event)).toEqual(['acquired', 'refreshed', 'denied']);
  });

  it('a lease belongs to the credential that took it: another caller naming its owner and token can neither refresh nor release it; an admin may release it, and every event names who acted', async () => {
    const leases = make();
    const svcA = { credential: 'token:a', actor: 'alice' };
    const svcB = { credential: 'token:b', actor: 'bob' };
    const admin = { credential: 'user:admin', actor: 'root', mayReleaseAny: true };
    const a = await leases.acquire('contract:bound', 'orders-service', 60_000, svcA);
    if (!a.acquired) throw new Error('not acquired');
    // Same owner name, same token, another credential: refused, and said so apart from a stale token.
    expect(await leases.refresh('contract:bound', 'orders-service', a.token, 86_400_000, svcB)).toEqual({ refreshed: false, reason: 'not_yours' });
    expect(await leases.release('contract:bound', 'orders-service', a.token, svcB)).toEqual({ released: false, reason: 'not_yours' });
    // Re-acquiring it under the same owner name is a denial like any other.
    expect(await leases.acquire('contract:bound', 'orders-service', 60_000, svcB)).toMatchObject({ acquired: false, owner: 'orders-service' });
    // An admin may refresh nothing that is not theirs, but may release it.
    expect(await leases.refresh('contract:bound', 'orders-service', a.token, 60_000, admin)).toEqual({ refreshed: false, reason: 'not_yours' });
    expect((await leases.live(10, 'contract:bound'))[0]).toMatchObject({ owner: 'orders-service', actor: 'alice', token: a.token });
    expect(await leases.release('contract:bound', 'orders-service', a.token, admin)).toEqual({ released: true });
    const events = await leaseHistory('contract:bound');
    expect(events.map((e) => [e.event, e.owner, e.actor])).toEqual([
      ['acquired', 'orders-service', 'alice'],
      ['denied', 'orders-service', 'bob'],
      ['released', 'orders-service', 'root'],
    ]);
  });

  it('a grant is the only token its resource’s fence accepts, whichever backend made it', async () => {
    const leases = make();
    const a = await leases.acquire('contract:fence', 'alice', 60_000);
    if (!a.acquired) throw new Error('not acquired');
    const accepted = async (token: number) =>
      (await db().$queryRaw<{ ok: boolean }[]>`SELECT bridge_fence_accept('contract:fence', ${token}::bigint) AS ok`)[0].ok;
    expect(await accepted(a.token)).toBe(true);
    expect(await accepted(a.token + 1)).toBe(false);
    expect(await accepted(a.token - 1)).toBe(false);
    await leases.release('contract:fence', 'alice', a.token);
    const b = await leases.acquire('contract:fence', 'bob', 60_000);
    if (!b.acquired) throw new Error('not acquired');
    expect(await accepted(a.token)).toBe(false);
    expect(await accepted(b.token)).toBe(true);
  });

  it('the sweeper records leases that ran out without anyone asking again, once', async () => {
    const leases = make();
    const a = await leases.acquire('contract:sweep', 'alice', 50);
    if (!a.acquired) throw new Error('not acquired');
    await eventually('the expired lease to leave the live list', async () => !(await leases.live(100)).some((l) => l.resource === 'contract:sweep'));
    expect(await leases.sweep()).toBeGreaterThanOrEqual(1);
    expect(await leases.sweep()).toBe(0);
    const b = await leases.acquire('contract:sweep', 'bob', 60_000);
    expect(b).toMatchObject({ acquired: true, token: a.token + 1 });
    const events = await leaseHistory('contract:sweep');
    expect(events.map((e) => e.event)).toEqual(['acquired', 'expired', 'acquired']);
  });

  it('lists live leases with their holders', async () => {
    const leases = make();
    await leases.acquire('contract:list-a', 'alice', 60_000);
    await leases.acquire('contract:list-b', 'bob', 30_000);
    const live = await leases.live(10);
    expect(live.map((l) => [l.resource, l.owner, l.backend])).toEqual([
      ['contract:list-b', 'bob', leases.name],
      ['contract:list-a', 'alice', leases.name],
    ]);
  });

  it('finds one resource’s lease however many others expire sooner (the limit applies after the lookup)', async () => {
    const leases = make();
    for (let i = 0; i < 5; i++) await leases.acquire(`contract:crowd-${i}`, `owner-${i}`, 10_000 + i);
    await leases.acquire('contract:wanted', 'carol', 60_000);
    expect((await leases.live(3)).map((l) => l.resource)).not.toContain('contract:wanted');
    expect((await leases.live(3, 'contract:wanted')).map((l) => [l.resource, l.owner])).toEqual([['contract:wanted', 'carol']]);
    expect(await leases.live(3, 'contract:nobody')).toEqual([]);
  });
});
