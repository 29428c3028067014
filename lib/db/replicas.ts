import type pg from 'pg';
import type { PrismaClient } from '@/generated/prisma/client';
import { env } from '@/lib/env';
import { createPool, createPrisma } from './client';
import { formatLsn, parseLsn } from './lsn';

/**
 * The read replicas (DATABASE_READ_URL): PostgreSQL hot standbys fed by streaming replication, each with its own
 * pool. A small monitor in every instance looks, every READ_REPLICA_POLL_MS, how far each standby has replayed the
 * primary's WAL (`pg_last_wal_replay_lsn()`) and how long ago the primary was at a position the standby has not
 * reached yet: that age is the replica's lag. A replica more than READ_REPLICA_MAX_LAG_MS behind, or not answering,
 * is out of rotation until it catches up. Which replica serves a given read is decided in ./read.ts.
 */
export type ReplicaStatus = {
  /** `replica-N`: its place in DATABASE_READ_URL (what /api/ready and the read headers say: no host names there). */
  name: string;
  /** host:port/database, for the signed-in operators' Workers page. */
  host: string;
  inRotation: boolean;
  /** How far it has replayed, as PostgreSQL writes it; null before the first look or while unreachable. */
  replayLsn: string | null;
  /** The primary's WAL written that it has not replayed yet; null when unknown. */
  lagBytes: number | null;
  /** How long ago the primary was at the first position it has not replayed (0 when it has replayed all). */
  lagMs: number | null;
  /** Why it is out of rotation, when it is. */
  problem: string | null;
  checkedAt: string | null;
};

export type ReplicaOptions = { maxLagMs: number; pollMs: number };

type Sample = { at: number; lsn: bigint };

/** The longest a look at a replica (connecting, or asking its position) may take before it counts as not answering. */
const LOOK_TIMEOUT_MS = 2_000;

async function withinLookTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${LOOK_TIMEOUT_MS} ms`)), LOOK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

export class Replica {
  readonly pool: pg.Pool;
  readonly prisma: PrismaClient;
  replay: bigint | null = null;
  lagBytes: number | null = null;
  lagMs: number | null = null;
  problem: string | null = 'not looked at yet';
  checkedAt: Date | null = null;

  constructor(
    readonly name: string,
    readonly host: string,
    url: string,
  ) {
    // A replica that does not answer must not hold up a read: it leaves the rotation and the read goes to the primary.
    this.pool = createPool(url, undefined, { connectionTimeoutMillis: LOOK_TIMEOUT_MS });
    this.prisma = createPrisma(this.pool);
  }

  get inRotation(): boolean {
    return this.problem === null;
  }

  /** Asks the standby how far it has replayed (once per monitor tick, and on demand when a read needs more). */
  async lookReplayed(): Promise<bigint | null> {
    const { rows } = await withinLookTimeout(this.pool.query<{ lsn: string | null }>('SELECT pg_last_wal_replay_lsn()::text AS lsn'));
    if (rows[0].lsn === null) throw new Error('not a standby (pg_last_wal_replay_lsn() is null): only hot standbys serve reads');
    const lsn = parseLsn(rows[0].lsn);
    if (lsn !== null && (this.replay === null || lsn > this.replay)) this.replay = lsn;
    return this.replay;
  }

  status(): ReplicaStatus {
    return {
      name: this.name,
      host: this.host,
      inRotation: this.inRotation,
      replayLsn: this.replay === null ? null : formatLsn(this.replay),
      lagBytes: this.lagBytes,
      lagMs: this.lagMs,
      problem: this.problem,
      checkedAt: this.checkedAt?.toISOString() ?? null,
    };
  }
}

/** host:port/database of a URL, as the Workers page shows a replica (never its user or password). */
export function replicaHost(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
}

export class ReadReplicas {
  readonly replicas: Replica[];
  /** The primary's WAL position at each recent tick: how long ago it passed a position tells a replica's lag in time. */
  private samples: Sample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private firstLook: Promise<void> | undefined;
  private next = 0;

  constructor(
    urls: string[],
    readonly options: ReplicaOptions,
    private readonly primaryPosition: () => Promise<bigint | null>,
  ) {
    this.replicas = urls.map((url, i) => new Replica(`replica-${i + 1}`, replicaHost(url), url));
  }

  /** Starts the monitor (once); resolves after its first look, so the first reads already know the replicas. */
  start(): Promise<void> {
    if (!this.firstLook) {
      this.firstLook = this.poll();
      this.timer = setInterval(() => void this.poll(), this.options.pollMs);
      this.timer.unref();
    }
    return this.firstLook;
  }

  /** One tick: the primary's position first, then each replica's, so a replica that kept up shows no lag. */
  async poll(): Promise<void> {
    const now = Date.now();
    const primary = await this.primaryPosition().catch(() => null);
    if (primary !== null) {
      this.samples.push({ at: now, lsn: primary });
      // Samples older than twice the allowed lag tell nothing more: past the limit is past the limit.
      const horizon = now - 2 * this.options.maxLagMs - 2 * this.options.pollMs;
      while (this.samples.length > 2 && this.samples[1].at < horizon) this.samples.shift();
    }
    await Promise.all(this.replicas.map((r) => this.look(r, now)));
  }

  private async look(replica: Replica, now: number): Promise<void> {
    try {
      const replay = await replica.lookReplayed();
      replica.checkedAt = new Date();
      this.measure(replica, replay!, now);
    } catch (err) {
      replica.problem = `not answering: ${(err as Error).message}`;
      replica.lagMs = replica.lagBytes = null;
    }
  }

  private measure(replica: Replica, replay: bigint, now: number): void {
    const latest = this.samples.at(-1);
    const behind = this.samples.find((s) => s.lsn > replay);
    replica.lagBytes = latest && latest.lsn > replay ? Number(latest.lsn - replay) : 0;
    replica.lagMs = behind ? now - behind.at : 0;
    replica.problem = replica.lagMs > this.options.maxLagMs ? `${replica.lagMs} ms behind the primary (more than READ_REPLICA_MAX_LAG_MS=${this.options.maxLagMs})` : null;
  }

  /**
   * A replica in rotation that has replayed at least `after` (taking turns between those that have), or null: then
   * the read goes to the primary. When none is known to have got there, the ones in rotation are asked again now
   * (one small query each): a position just committed is usually replayed within milliseconds.
   */
  async choose(after: bigint): Promise<Replica | null> {
    await this.start();
    const candidates = this.rotation();
    const ready = candidates.filter((r) => r.replay !== null && r.replay >= after);
    if (ready.length) return ready[this.next++ % ready.length];
    for (const replica of candidates) {
      const replay = await replica.lookReplayed().catch(() => null);
      if (replay !== null && replay >= after) return replica;
    }
    return null;
  }

  private rotation(): Replica[] {
    return this.replicas.filter((r) => r.inRotation);
  }

  status(): ReplicaStatus[] {
    return this.replicas.map((r) => r.status());
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.allSettled(this.replicas.map(async (r) => (await r.prisma.$disconnect(), await r.pool.end())));
  }
}

export function replicaUrls(value = env().DATABASE_READ_URL): string[] {
  return (value ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
}

export function replicaOptions(): ReplicaOptions {
  return { maxLagMs: env().READ_REPLICA_MAX_LAG_MS, pollMs: env().READ_REPLICA_POLL_MS };
}
