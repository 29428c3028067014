import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { reevaluateIntent } from '@/lib/intents/commands';
import { FencingTokenStaleError } from '@/lib/leases/errors';
import { RedisLeases, redisLeaseScripts } from '@/lib/leases/redis';
import { redisClient } from '@/lib/leases/redis-client';
import { makeIntent, resetDatabase } from '../helpers';
import { redisServerInstalled, startRedisServer, type RedisServer } from '../redis-server';
import { flushRedis, redisUrl } from './backends';
import { eventually } from '../wait';


describe.skipIf(!redisUrl)('Redis leases: compare-and-delete', () => {
  beforeEach(async () => {
    await resetDatabase();
    await flushRedis();
  });

  it('10,000 compare-and-delete trials never delete another owner’s key', async () => {
    // The scripts alone (no Postgres events), so the trials measure Redis, not the event log.
    const redis = await redisClient(redisUrl);
    const { grant, compareAndDelete, holderKey } = redisLeaseScripts;
    const SLOTS = 50;
    const TRIALS_PER_SLOT = 200;
    let trials = 0;
    let staleDeletesRefused = 0;
    const slot = async (s: number) => {
      const resource = `cad:${s}`;
      for (let i = 0; i < TRIALS_PER_SLOT; i++) {
        trials++;
        const a = await grant(redis, resource, `a-${s}`, 1 + (i % 3), 0);
        if (a[0] !== 'acquired') throw new Error('slot resource was free');
        // Half the trials let the first lease run out before the second owner asks.
        if (i % 2 === 0) await eventually('the first lease to run out', async () => (await redis.exists(holderKey(resource))) === 0, { everyMs: 1 });
        const b = await grant(redis, resource, `b-${s}`, 60_000, 0);
        const deleted = await compareAndDelete(redis, resource, `a-${s}`, Number(a[1]));
        if (b[0] === 'acquired') {
          expect(deleted).toBe(0);
          staleDeletesRefused++;
          expect(await redis.get(holderKey(resource))).toBe(`${b[1]}:b-${s}`);
          expect(await compareAndDelete(redis, resource, `b-${s}`, Number(b[1]))).toBeGreaterThan(0);
        } else if (deleted === 0) {
          // a's lease ran out between b's denial and a's delete: nobody holds it now.
          expect(await redis.exists(holderKey(resource))).toBe(0);
        } else {
          expect(await redis.exists(holderKey(resource))).toBe(0);
        }
      }
    };
    await Promise.all(Array.from({ length: SLOTS }, (_, s) => slot(s)));
    expect(trials).toBe(10_000);
    expect(staleDeletesRefused).toBeGreaterThan(4_000);
    console.info(`[compare-and-delete] ${trials} trials, ${staleDeletesRefused} deletes by an expired holder refused, every successor's key intact`);
  });

  it('the backend’s release goes through the same compare-and-delete', async () => {
    const leases = new RedisLeases(redisUrl);
    const a = await leases.acquire('cad:backend', 'alice', 1);
    if (!a.acquired) throw new Error('not acquired');
    const redis = await redisClient(redisUrl);
    while ((await redis.exists(redisLeaseScripts.holderKey('cad:backend'))) === 1);
    const b = await leases.acquire('cad:backend', 'bob', 60_000);
    if (!b.acquired) throw new Error('not acquired');
    expect(await leases.release('cad:backend', 'alice', a.token)).toEqual({ released: false, reason: 'not_held' });
    expect(await redis.get(redisLeaseScripts.holderKey('cad:backend'))).toBe(`${b.token}:bob`);
  });
});

describe.skipIf(!redisServerInstalled())('Redis leases: a restart between two acquires', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(resetDatabase);

  const write = (intentId: string, resource: string, token: number, value: number) =>
    reevaluateIntent({ id: intentId, diff: { value, by: `token-${token}` }, source: 'restart-test', reason: 'fenced write', fencing: { resource, token } }, { name: 'restart-test' });

  it('does not let an older token through a fenced write, and new grants stay above every token seen', async () => {
    const leases = new RedisLeases(server.url);
    const resource = 'restart:r';
    const intent = await makeIntent('PROCESSED');

    const a = await leases.acquire(resource, 'alice', 60_000);
    if (!a.acquired) throw new Error('not acquired');
    await write(intent.id, resource, a.token, 1);
    await leases.release(resource, 'alice', a.token);
    const b = await leases.acquire(resource, 'bob', 60_000);
    if (!b.acquired) throw new Error('not acquired');
    expect(b.token).toBeGreaterThan(a.token);
    await write(intent.id, resource, b.token, 2);

    // Redis forgets everything: bob's lease, and the counter that handed out his token.
    await server.restart();
    // The client reconnects on its own after the restart; the first commands may fail while it does.
    const c = await eventually('the client to reconnect after the restart', () => leases.acquire(resource, 'carol', 60_000).catch(() => undefined));
    if (!c.acquired) throw new Error('not acquired: the restart should have dropped bob’s lease');
    expect(c.token).toBeGreaterThan(b.token);

    await expect(write(intent.id, resource, a.token, 3)).rejects.toBeInstanceOf(FencingTokenStaleError);
    await expect(write(intent.id, resource, b.token, 3)).rejects.toBeInstanceOf(FencingTokenStaleError);
    await write(intent.id, resource, c.token, 3);
    await leases.release(resource, 'carol', c.token);

    // A counter restored from an old snapshot lags behind: the grant it would make is refused by the fence, so the
    // manager moves the counter past Postgres' mark and hands out a token that can write.
    await (await redisClient(server.url)).set(`bridge:lease:token:${resource}`, '1');
    const d = await leases.acquire(resource, 'dave', 60_000);
    if (!d.acquired) throw new Error('not acquired');
    expect(d.token).toBeGreaterThan(c.token);
    await write(intent.id, resource, d.token, 4);
  });
});

