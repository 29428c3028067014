import { db, type Db } from '@/lib/db/client';
import { env } from '@/lib/env';
import { redisClient } from '@/lib/leases/redis-client';

/**
 * Dedup stores with a time to live, one contract on two backends: `seen(key, ttlMs)` answers `first` for the first
 * caller of a key and `repeat` for everyone else until the key expires, atomically (two concurrent first callers:
 * exactly one hears `first`). Postgres keeps keys in dedup_keys and purges the expired ones; Redis keeps them as
 * keys with a TTL, which it drops itself.
 */
export type Seen = 'first' | 'repeat';

export interface DedupStore {
  readonly name: 'postgres' | 'redis';
  seen(key: string, ttlMs: number): Promise<Seen>;
  /** Drops expired keys; returns how many (Redis expires keys itself: 0). */
  purge(): Promise<number>;
}

export class PostgresDedup implements DedupStore {
  readonly name = 'postgres' as const;
  constructor(private readonly client: () => Db = db) {}

  async seen(key: string, ttlMs: number): Promise<Seen> {
    // The upsert takes the key when it is new or expired; a live key is left alone and returns no row.
    const rows = await this.client().$queryRaw<unknown[]>`
      INSERT INTO dedup_keys AS d (key, expires_at) VALUES (${key}, clock_timestamp() + make_interval(secs => ${ttlMs}::bigint / 1000.0))
      ON CONFLICT (key) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE d.expires_at <= clock_timestamp()
      RETURNING 1`;
    return rows.length ? 'first' : 'repeat';
  }

  purge(): Promise<number> {
    return this.client().$executeRaw`DELETE FROM dedup_keys WHERE expires_at <= clock_timestamp()`;
  }
}

export class RedisDedup implements DedupStore {
  readonly name = 'redis' as const;
  constructor(private readonly url: string) {}

  async seen(key: string, ttlMs: number): Promise<Seen> {
    const redis = await redisClient(this.url);
    const set = await redis.set(`bridge:dedup:${key}`, '1', { condition: 'NX', expiration: { type: 'PX', value: ttlMs } });
    return set === 'OK' ? 'first' : 'repeat';
  }

  async purge(): Promise<number> {
    return 0;
  }
}

const globalForDedup = globalThis as unknown as { bridgeDedup?: DedupStore };

/** The store IDEMPOTENCY_BACKEND names (Postgres unless told otherwise). */
export function dedupStore(): DedupStore {
  if (!globalForDedup.bridgeDedup) {
    const e = env();
    globalForDedup.bridgeDedup = e.IDEMPOTENCY_BACKEND === 'redis' ? new RedisDedup(e.REDIS_URL!) : new PostgresDedup();
  }
  return globalForDedup.bridgeDedup;
}

/**
 * Drops the store chosen so far: the next dedupStore() builds the one the configuration names then. A server chooses
 * once; tests that switch IDEMPOTENCY_BACKEND call this (after forgetEnv) so that the switch, and its undoing, take
 * effect. A Redis store's connection is closeRedisClients' to close.
 */
export function forgetDedupStore(): void {
  globalForDedup.bridgeDedup = undefined;
}
