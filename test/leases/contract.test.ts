import { beforeEach, describe, expect, it } from 'vitest';
import { leaseHistory } from '@/lib/leases/events';
import { resetDatabase } from '../helpers';
import { BACKENDS, flushRedis, grantsFrom, overlaps, until } from './backends';

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
        expect(await leases.release(resource, owner, result.token)).toBe(true);
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
    const first = await leases.acquire('contract:ttl', 'alice', 150);
    if (!first.acquired) throw new Error('not acquired');
    expect((await leases.acquire('contract:ttl', 'bob', 150)).acquired).toBe(false);
    const second = await until(async () => {
      const r = await leases.acquire('contract:ttl', 'bob', 60_000);
      return r.acquired ? r : undefined;
    });
    expect(second.token).toBeGreaterThan(first.token);
    // The expired holder can neither refresh nor release any more.
    expect(await leases.refresh('contract:ttl', 'alice', first.token, 60_000)).toEqual({ refreshed: false });
    expect(await leases.release('contract:ttl', 'alice', first.token)).toBe(false);
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
    expect(await leases.release('contract:release', 'bob', a.token)).toBe(false);
    expect(await leases.release('contract:release', 'alice', a.token + 1)).toBe(false);
    expect((await leases.acquire('contract:release', 'bob', 60_000)).acquired).toBe(false);
    expect(await leases.release('contract:release', 'alice', a.token)).toBe(true);
    expect(await leases.release('contract:release', 'alice', a.token)).toBe(false);
    const b = await leases.acquire('contract:release', 'bob', 60_000);
    expect(b).toMatchObject({ acquired: true, token: a.token + 1 });
    // The old holder's token cannot release the new holder's lease, even under the same owner name.
    const c = await leases.acquire('contract:release-same', 'alice', 60_000);
    if (!c.acquired) throw new Error('not acquired');
    await leases.release('contract:release-same', 'alice', c.token);
    const d = await leases.acquire('contract:release-same', 'alice', 60_000);
    expect(await leases.release('contract:release-same', 'alice', c.token)).toBe(false);
    expect(d.acquired && (await leases.release('contract:release-same', 'alice', d.token))).toBe(true);
  });

  it('refresh extends the lease for its holder only', async () => {
    const leases = make();
    const a = await leases.acquire('contract:refresh', 'alice', 300);
    if (!a.acquired) throw new Error('not acquired');
    const refreshed = await leases.refresh('contract:refresh', 'alice', a.token, 60_000);
    if (!refreshed.refreshed) throw new Error('not refreshed');
    expect(Date.parse(refreshed.expiresAt)).toBeGreaterThan(Date.parse(a.expiresAt) + 50_000);
    expect(await leases.refresh('contract:refresh', 'bob', a.token, 60_000)).toEqual({ refreshed: false });
    expect(await leases.refresh('contract:refresh', 'alice', a.token + 1, 60_000)).toEqual({ refreshed: false });
    // Long past the original 300 ms TTL the lease is still alice's: the refresh moved its expiry.
    const live = await until(async () => (await leases.live(10)).find((l) => l.resource === 'contract:refresh'));
    expect(live).toMatchObject({ owner: 'alice', token: a.token, expiresAt: refreshed.expiresAt });
    expect((await leases.acquire('contract:refresh', 'bob', 1000)).acquired).toBe(false);
    const events = await leaseHistory('contract:refresh');
    expect(events.map((e) => e.event)).toEqual(['acquired', 'refreshed', 'denied']);
  });

  it('the sweeper records leases that ran out without anyone asking again, once', async () => {
    const leases = make();
    const a = await leases.acquire('contract:sweep', 'alice', 50);
    if (!a.acquired) throw new Error('not acquired');
    await until(async () => !(await leases.live(100)).some((l) => l.resource === 'contract:sweep'));
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
