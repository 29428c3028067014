import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { PostgresDedup, RedisDedup, type DedupStore } from '@/lib/dedup/store';
import { resetDatabase } from '../helpers';
import { flushRedis, redisUrl } from './backends';
import { eventually } from '../wait';

const STORES: { name: string; make: () => DedupStore; skip: boolean }[] = [
  { name: 'postgres', make: () => new PostgresDedup(), skip: false },
  { name: 'redis', make: () => new RedisDedup(redisUrl), skip: !redisUrl },
];

describe.each(STORES)('dedup store contract: $name', ({ make, skip }) => {
  beforeEach(async ({ skip: skipTest }) => {
    if (skip) skipTest('no Redis in this run (see the warning at the start of the run)');
    await resetDatabase();
    await flushRedis();
  });

  it('first, then repeat until the key expires, then first again', async () => {
    const store = make();
    expect(await store.seen('review:42:7:abc', 150)).toBe('first');
    expect(await store.seen('review:42:7:abc', 150)).toBe('repeat');
    expect(await store.seen('review:42:7:def', 150)).toBe('first');
    await eventually('the first key to expire', async () => (await store.seen('review:42:7:abc', 60_000)) === 'first');
    expect(await store.seen('review:42:7:abc', 60_000)).toBe('repeat');
  });

  it('20 concurrent first callers of one key: exactly one hears first', async () => {
    const store = make();
    const answers = await Promise.all(Array.from({ length: 20 }, () => store.seen('webhook:delivery-9', 60_000)));
    expect(answers.filter((a) => a === 'first')).toHaveLength(1);
  });

  it('purges expired keys (Postgres; Redis expires them itself)', async () => {
    const store = make();
    await store.seen('short', 1);
    await store.seen('long', 60_000);
    await eventually('the short key to expire', async () => (await store.seen('short', 1)) === 'first');
    const purged = await eventually('the purge to remove the expired key', async () => {
      const n = await store.purge();
      return store.name === 'redis' || n > 0 ? n : undefined;
    });
    if (store.name === 'postgres') {
      expect(purged).toBeGreaterThanOrEqual(1);
      const left = await db().$queryRaw<{ key: string }[]>`SELECT key FROM dedup_keys ORDER BY key`;
      expect(left.map((r) => r.key)).toEqual(['long']);
    }
  });
});
