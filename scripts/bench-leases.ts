/**
 * Lease acquire/release pairs per second on each backend (reported, with zero double grants), for
 * `npm run bench`. Each backend is measured beside a bare baseline doing the least the same backend can do for a
 * lease — Postgres: one upsert to take and one update to give back on a plain table, no events, no fence; Redis:
 * SET NX PX and a compare-and-delete script, no events — in alternating rounds, so the ratio holds on a busy
 * machine. Then a contended run (many owners, few resources) whose event log is checked for double grants.
 */
import pg from 'pg';
import { redisServerInstalled, startRedisServer, type RedisServer } from '../test/redis-server';

type Say = (line: string) => void;
export type LeaseBenchRow = { measure: string; measured: string; target: string; pass: boolean | null };

const CONCURRENCY = 8;
const PAIRS_PER_ROUND = 2_000;
const ROUNDS = 3;

async function pairsPerSecond(pair: (worker: number, i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      for (let i = next++; i < PAIRS_PER_ROUND; i = next++) await pair(worker, i);
    }),
  );
  return PAIRS_PER_ROUND / ((performance.now() - started) / 1000);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

type LeaseBackend = { name: string; lease: Pick<import('../lib/leases/types').LeaseBackend, 'acquire' | 'release'>; baseline: (w: number, i: number) => Promise<void> };

export async function benchLeases(say: Say): Promise<LeaseBenchRow[]> {
  const { PostgresLeases } = await import('../lib/leases/postgres');
  const { RedisLeases } = await import('../lib/leases/redis');
  const { redisClient, closeRedisClients } = await import('../lib/leases/redis-client');
  const rows: LeaseBenchRow[] = [];

  const bare = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, application_name: 'bridge:bench-leases' });
  await bare.query('CREATE TABLE IF NOT EXISTS bench_bare_leases (resource text PRIMARY KEY, owner text, token bigint NOT NULL, expires_at timestamptz)');
  let redisServer: RedisServer | undefined;
  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl && redisServerInstalled()) {
    redisServer = await startRedisServer();
    redisUrl = redisServer.url;
  }

  try {
    const backends: LeaseBackend[] = [{ name: 'postgres', lease: new PostgresLeases(), baseline: (w, i) => bareUpsertPair(bare, w, i) }];
    if (redisUrl) {
      const redis = await redisClient(redisUrl);
      backends.push({ name: 'redis', lease: new RedisLeases(redisUrl), baseline: (w, i) => bareRedisPair(redis, w, i) });
    } else {
      say('leases: no redis-server and no REDIS_URL — the Redis backend is not measured');
      rows.push({ measure: 'lease acquire/release pairs, redis', measured: 'not measured (no Redis)', target: 'reported', pass: null });
    }
    for (const b of backends) rows.push(...(await benchBackend(b, say)));
  } finally {
    await bare.query('DROP TABLE IF EXISTS bench_bare_leases').catch(() => undefined);
    await bare.end();
    await closeRedisClients();
    await redisServer?.stop();
  }
  return rows;
}

/** The least Postgres can do for a lease: one upsert to take it and one update to give it back, on a plain table. */
async function bareUpsertPair(bare: pg.Pool, w: number, i: number): Promise<void> {
  const resource = `bare:${w}:${i % 50}`;
  const { rows: got } = await bare.query<{ token: string }>(
    `INSERT INTO bench_bare_leases AS l (resource, owner, token, expires_at) VALUES ($1, $2, 1, clock_timestamp() + interval '30 seconds')
     ON CONFLICT (resource) DO UPDATE SET owner = EXCLUDED.owner, token = l.token + 1, expires_at = EXCLUDED.expires_at
     WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp() RETURNING token`,
    [resource, `w${w}`],
  );
  await bare.query('UPDATE bench_bare_leases SET owner = NULL WHERE resource = $1 AND owner = $2 AND token = $3', [resource, `w${w}`, got[0].token]);
}

/** The least Redis can do for a lease: SET NX PX, then a compare-and-delete script. */
async function bareRedisPair(redis: Awaited<ReturnType<typeof import('../lib/leases/redis-client').redisClient>>, w: number, i: number): Promise<void> {
  const key = `bench:bare:${w}:${i % 50}`;
  const value = `${i}:w${w}`;
  await redis.set(key, value, { condition: 'NX', expiration: { type: 'PX', value: 30_000 } });
  await redis.eval("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end", { keys: [key], arguments: [value] });
}

/** Alternating rounds of the backend and its bare baseline, then the contended run; the backend's two table rows. */
async function benchBackend(b: LeaseBackend, say: Say): Promise<LeaseBenchRow[]> {
  const engine: number[] = [];
  const baseline: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    engine.push(
      await pairsPerSecond(async (w, i) => {
        const resource = `bench:${b.name}:${w}:${i % 50}`;
        const grant = await b.lease.acquire(resource, `w${w}`, 30_000);
        if (!grant.acquired) throw new Error(`bench: ${resource} was denied to its only user`);
        await b.lease.release(resource, `w${w}`, grant.token);
      }),
    );
    baseline.push(await pairsPerSecond(b.baseline));
    say(`leases ${b.name} round ${round}/${ROUNDS}: ${Math.round(engine.at(-1)!)} pairs/s (bare ${Math.round(baseline.at(-1)!)} /s)`);
  }
  const { grants, doubleGrants } = await contended(b);
  return [
    {
      measure: `lease acquire/release pairs, ${b.name} (${CONCURRENCY} in flight)`,
      measured: `${Math.round(median(engine))} pairs/s, ${Math.round((median(engine) / median(baseline)) * 100)} % of bare (${Math.round(median(baseline))} /s)`,
      target: 'reported',
      pass: null,
    },
    { measure: `  … contended (16 owners, 4 resources): double grants`, measured: `${doubleGrants} in ${grants} grants`, target: '0', pass: doubleGrants === 0 },
  ];
}

/** Contended: 16 owners on 4 resources, then the event log is checked for overlapping grants. */
async function contended(b: LeaseBackend): Promise<{ grants: number; doubleGrants: number }> {
  const { leaseHistory } = await import('../lib/leases/events');
  const resources = Array.from({ length: 4 }, (_, r) => `bench:${b.name}:contended:${r}`);
  let grants = 0;
  await Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; i < 60; i++) {
        const resource = resources[(w + i) % resources.length];
        const grant = await b.lease.acquire(resource, `c${w}`, 30_000);
        if (grant.acquired) {
          grants++;
          await b.lease.release(resource, `c${w}`, grant.token);
        }
      }
    }),
  );
  let doubleGrants = 0;
  for (const resource of resources) {
    const held = new Map<number, { start: number; end: number }>();
    for (const e of await leaseHistory(resource)) {
      if (e.token === null) continue;
      if (e.event === 'acquired') held.set(e.token, { start: Date.parse(e.at), end: Date.parse(e.expiresAt!) });
      if (e.event === 'released' && held.has(e.token)) held.get(e.token)!.end = Date.parse(e.expiresAt!);
    }
    const ordered = [...held.entries()].sort((x, y) => x[0] - y[0]).map(([, g]) => g);
    for (let k = 1; k < ordered.length; k++) if (ordered[k].start < ordered[k - 1].end) doubleGrants++;
  }
  return { grants, doubleGrants };
}
