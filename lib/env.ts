import { z } from 'zod';

/**
 * All configuration, read and validated once. Defaults are the numbers in docs/LOCKING.md. The lock strategy per
 * operation and the retry/timeout numbers are the rollout's feature flags: the console shows the values in force
 * and every replay run records them.
 */
const intFrom = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);
export const LOCK_STRATEGIES = ['pessimistic', 'optimistic', 'adaptive'] as const;
const strategy = (def: LockStrategy) => z.enum(LOCK_STRATEGIES).default(def);

export const envSchema = z.object({
  DATABASE_URL: z.string().url().optional(),
  /** The database itself, not a pooler: LISTEN (the live feed) needs it behind PgBouncer in transaction mode (docs/DEPLOY.md). */
  DATABASE_DIRECT_URL: z.string().url().optional(),
  /**
   * Hot standbys (streaming replicas) that serve the console's reads, comma-separated; unset, every read runs on the
   * primary (lib/db/replicas.ts, docs/DEPLOY.md "Reads from replicas").
   */
  DATABASE_READ_URL: z
    .string()
    .optional()
    .refine((v) => !v || v.split(',').every((u) => URL.canParse(u.trim())), 'a URL, or several separated by commas'),
  /** A replica further behind the primary than this is out of rotation until it catches up. */
  READ_REPLICA_MAX_LAG_MS: intFrom(5000, 1, 3_600_000),
  /** How often each instance looks how far each replica has replayed. */
  READ_REPLICA_POLL_MS: intFrom(1000, 50, 60_000),
  PORT: intFrom(3000, 1, 65535),
  /**
   * Which environment this console serves; shown as a badge, and production disables the replay. Unset, it is
   * development only on the embedded database: with DATABASE_URL it is production (see `defaultEnvironment`).
   */
  BRIDGE_ENV: z.enum(['development', 'staging', 'production']).default('development'),
  DB_POOL_SIZE: intFrom(10, 1, 200),
  /**
   * How many of this process's pooled connections may wait on row locks at once (docs/LOCKING.md, "Waiting on a held
   * row"); 0, the default, means half the pool. The rest stay free for reads, health and the Locks page.
   */
  DB_POOL_LOCK_WAITERS: intFrom(0, 0, 200),
  /** Server-side prepared statements for the engine's queries (lib/db/client.ts); false behind PgBouncer < 1.21 in transaction mode. */
  DB_PREPARED_STATEMENTS: z.enum(['true', 'false']).default('true').transform((v) => v === 'true'),
  LOCK_TIMEOUT_MS: intFrom(5000, 1, 600_000),
  LOCK_STRATEGY_UPDATE_STATUS: strategy('pessimistic'),
  /** adaptive: no row lock while the intent is uncontended, the row lock at once once it is (docs/LOCKING.md). */
  LOCK_STRATEGY_REEVALUATE: strategy('adaptive'),
  /** How long a version conflict marks an intent as contended for the adaptive strategy (every instance reads it from Postgres). */
  CONTENTION_MEMORY_MS: intFrom(30_000, 0, 24 * 3_600_000),
  RETRY_MAX_ATTEMPTS: intFrom(3, 1, 20),
  RETRY_BASE_MS: intFrom(100, 0, 60_000),
  RETRY_FACTOR: z.coerce.number().min(1).max(10).default(2),
  RETRY_JITTER_MS: intFrom(50, 0, 60_000),
  RETRY_MAX_DELAY_MS: intFrom(2000, 0, 600_000),
  DEADLOCK_MAX_ATTEMPTS: intFrom(3, 1, 20),
  IDEMPOTENCY_TTL_HOURS: intFrom(24, 24, 24 * 90),
  /** Contention replay: JSON object overriding the default targets runs are judged against (lib/replay/targets.ts). */
  REPLAY_TARGETS: z.string().optional(),
  // ── Sign-in and API access (see lib/auth and docs/AUTH.md) ──
  /** First run on an empty user table: the admin's name and password (else `admin` with a printed one-time password). */
  CONSOLE_ADMIN_USER: z.string().trim().toLowerCase().regex(/^[a-z0-9][a-z0-9._-]{1,63}$/, 'letters, digits, . _ - (2 to 64)').optional(),
  CONSOLE_ADMIN_PASSWORD: z.string().min(12, 'at least 12 characters').max(256).optional(),
  /** Provisioned at start as an admin API token (for automation); generate with `node -e "console.log('bc_'+require('crypto').randomBytes(32).toString('base64url'))"`. */
  CONSOLE_BOOTSTRAP_TOKEN: z.string().regex(/^bc_[A-Za-z0-9_-]{32,200}$/, 'bc_ followed by at least 32 of A-Z a-z 0-9 _ -').optional(),
  /** When set, GET /api/metrics wants `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().min(16, 'at least 16 characters').optional(),
  /** Idle lifetime of a console session; each use slides it forward, up to SESSION_MAX_HOURS after sign-in. */
  SESSION_TTL_HOURS: intFrom(8, 1, 24 * 30),
  SESSION_MAX_HOURS: intFrom(72, 1, 24 * 90),
  /** Failed sign-ins within the window before delays start (per username from one address, per username from all), and the ceiling per known address (lib/auth/rate-limit.ts). */
  SIGNIN_MAX_FAILURES: intFrom(5, 1, 1000),
  SIGNIN_MAX_FAILURES_PER_USER: intFrom(50, 1, 100_000),
  SIGNIN_MAX_FAILURES_PER_IP: intFrom(50, 1, 100_000),
  SIGNIN_WINDOW_MINUTES: intFrom(15, 1, 24 * 60),
  /** The longest a throttled sign-in waits after the last failure (the delay doubles from 1 s up to this). */
  SIGNIN_MAX_DELAY_SECONDS: intFrom(30, 1, 3600),
  /** Behind a reverse proxy that sets X-Forwarded-For / X-Forwarded-Host: trust them (else they are client-controlled). */
  TRUST_PROXY: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  /** Extra origins (comma-separated, e.g. https://console.example.com) allowed to send cookie-authenticated writes. */
  AUTH_TRUSTED_ORIGINS: z.string().default('').transform((v) => v.split(',').map((o) => o.trim()).filter(Boolean)),
  // ── Lease locks and dedup stores (lib/leases) ──
  /** Where lease locks live: `postgres` (lease rows; the default) or `redis` (SET NX PX; needs REDIS_URL). */
  LEASE_BACKEND: z.enum(['postgres', 'redis']).default('postgres'),
  /** Where the API's idempotency keys are first claimed: `postgres` (the default) or `redis` (needs REDIS_URL). */
  IDEMPOTENCY_BACKEND: z.enum(['postgres', 'redis']).default('postgres'),
  /** Redis for LEASE_BACKEND=redis / IDEMPOTENCY_BACKEND=redis, e.g. redis://localhost:6379. */
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://').optional(),
  /** How often each console instance looks for leases that expired without anyone asking for them again. */
  LEASE_SWEEP_INTERVAL_MS: intFrom(5000, 100, 3_600_000),
  // ── Pipeline and workers (lib/pipeline, lib/workers) ──
  /** The BridgeSet, in order: names from the bridge registry (lib/pipeline/bridges.ts). */
  PIPELINE_BRIDGES: z.string().default('input,normalize,feedback,output').transform((v) => v.split(',').map((b) => b.trim()).filter(Boolean)),
  /** Modules a worker imports at start to register a deployment's own bridges (comma-separated paths). */
  PIPELINE_BRIDGE_MODULES: z.string().default('').transform((v) => v.split(',').map((m) => m.trim()).filter(Boolean)),
  /** Connections that hold pipeline execution locks (one per running pipeline), apart from the engine's pool. */
  PIPELINE_LOCK_POOL_SIZE: intFrom(10, 1, 200),
  /** A pipeline run longer than this loses its execution lock (its transaction is ended). */
  PIPELINE_MAX_RUN_MS: intFrom(600_000, 1000, 86_400_000),
  /** `npm start` runs one worker beside the console in development unless WORKERS=0. */
  WORKERS: intFrom(1, 0, 16),
  WORKER_CONCURRENCY: intFrom(4, 1, 100),
  WORKER_BATCH_SIZE: intFrom(10, 1, 1000),
  WORKER_POLL_MS: intFrom(250, 10, 60_000),
  /** A claim not heartbeated for this long is stale and rescued (by the database's clock). */
  WORKER_LEASE_MS: intFrom(30_000, 100, 3_600_000),
  WORKER_HEARTBEAT_MS: intFrom(5_000, 20, 600_000),
  WORKER_RESCUE_MS: intFrom(5_000, 20, 600_000),
  WORKER_MAX_ATTEMPTS: intFrom(5, 1, 100),
  WORKER_RETRY_BASE_MS: intFrom(1_000, 0, 3_600_000),
  WORKER_RETRY_JITTER_MS: intFrom(500, 0, 3_600_000),
  WORKER_RETRY_MAX_MS: intFrom(300_000, 0, 86_400_000),
  /** On SIGTERM: how long in-flight runs get to reach the end of their current bridge before their claims are released. */
  WORKER_SHUTDOWN_GRACE_MS: intFrom(10_000, 0, 600_000),
  // ── Lock history (lib/locks/history, docs/LOCKING.md) ──
  /** Whether this process takes part in sampling the blocking graph (one sampler per database leads; the rest stand by). */
  LOCK_HISTORY_SAMPLER: z.enum(['on', 'off']).default('on'),
  /** How often the leading sampler reads the blocking graph while anything waits for a lock. */
  LOCK_HISTORY_SAMPLE_MS: intFrom(1000, 100, 60_000),
  /** How often it looks whether anything waits (one read of pg_stat_activity) while nothing does. */
  LOCK_HISTORY_IDLE_MS: intFrom(1000, 100, 600_000),
  /** How often a standing-by sampler tries to take the leadership over: the longest a dead leader goes unreplaced. */
  LOCK_HISTORY_TAKEOVER_MS: intFrom(2000, 100, 600_000),
  /** Episodes (with their samples and intents) and storm minutes are kept this many days, counted from the episode's start (whole days retire). */
  LOCK_HISTORY_RETENTION_DAYS: intFrom(14, 1, 3650),
  /** New root blockers written one by one per minute; beyond that they are counted in the minute's storm summary. */
  LOCK_HISTORY_EPISODES_PER_MINUTE: intFrom(120, 1, 100_000),
  // ── Events out (lib/events) ──
  /** NATS server(s) with JetStream for the outbox relay (e.g. nats://127.0.0.1:4222); unset: no relay runs, events wait in the outbox. */
  NATS_URL: z.string().trim().min(1).optional(),
  /** Published outbox rows are deleted after this many hours. */
  OUTBOX_RETENTION_HOURS: intFrom(72, 1, 24 * 365),
  // ── Partitioned history (lib/db/partitions.ts, docs/SCALE.md "Partitioned history") ──
  /** How many months past the current one housekeeping keeps partitions ready for. */
  PARTITION_MONTHS_AHEAD: intFrom(3, 1, 120),
  /** How many days past the current one housekeeping keeps partitions ready for, in the tables partitioned by day. */
  PARTITION_DAYS_AHEAD: intFrom(7, 1, 365),
  /** audit_events: a month's partition is retired once its newest possible row is this many days old; 0 keeps everything. */
  AUDIT_EVENTS_RETENTION_DAYS: intFrom(0, 0, 36_500),
  /** What retiring an expired audit_events partition does: `drop` it, or only `detach` it (kept as a table of its own, for archiving). */
  AUDIT_EVENTS_RETENTION_ACTION: z.enum(['drop', 'detach']).default('drop'),
  // ── The intent timeline (lib/timeline) ──
  /** Lock waits, lock timeouts, idempotent repeats and refused fenced writes the engine recorded are kept this many days. */
  INTENT_ENGINE_EVENTS_RETENTION_DAYS: intFrom(14, 1, 3650),
  /** Lease events (acquired, denied, refreshed, released, expired) are kept this many days: the leases' history and the intents' timelines read them. */
  LEASE_EVENTS_RETENTION_DAYS: intFrom(7, 1, 3650),
  /** Per-intent outcome counts by minute are kept this many days: the Contention page looks back a day at most, and links to a past window keep working this long. */
  INTENT_OUTCOMES_RETENTION_DAYS: intFrom(7, 1, 3650),
  /** How often a relay looks for new rows without a notification (it wakes at once on one). */
  OUTBOX_POLL_MS: intFrom(1000, 10, 60_000),
  /**
   * The JetStream stream the relays publish to (created if missing), and a prefix for its subjects: environments
   * sharing one NATS each need their own pair (JetStream refuses two streams over the same subjects), e.g.
   * EVENTS_STREAM=BRIDGE_EVENTS_STAGING with EVENTS_SUBJECT_PREFIX=staging publishes `staging.evt.intent.created`.
   */
  EVENTS_STREAM: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only (1 to 64; JetStream stream names have no dots, spaces or wildcards)')
    .default('BRIDGE_EVENTS'),
  EVENTS_SUBJECT_PREFIX: z
    .string()
    .trim()
    .regex(/^([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)?$/, 'dot-separated tokens of letters, digits, _ and - (no wildcards), e.g. staging or acme.staging')
    .max(64, 'at most 64 characters')
    .default(''),
});

export type Env = z.infer<typeof envSchema>;

const needsRedis = (e: { LEASE_BACKEND: string; IDEMPOTENCY_BACKEND: string; REDIS_URL?: string }) =>
  (e.LEASE_BACKEND === 'redis' || e.IDEMPOTENCY_BACKEND === 'redis') && !e.REDIS_URL;

let cached: Env | undefined;

/**
 * A console pointed at a real database (DATABASE_URL) without a BRIDGE_ENV is not assumed to be someone's laptop:
 * it runs as production (Secure cookies, replay off) until told otherwise.
 */
function defaultEnvironment(source: NodeJS.ProcessEnv): 'development' | 'production' {
  return source.DATABASE_URL ? 'production' : 'development';
}

/** What start-up should say about the environment when it was chosen by default rather than set. */
export function environmentNote(source: NodeJS.ProcessEnv = process.env): string | null {
  if (source.BRIDGE_ENV) return null;
  return defaultEnvironment(source) === 'production'
    ? 'BRIDGE_ENV is not set and DATABASE_URL is: running as production (Secure cookies, replay off). Set BRIDGE_ENV=development or staging to change that.'
    : 'BRIDGE_ENV is not set: development on the embedded database (plain-HTTP cookies, replay on).';
}

export function env(): Env {
  if (!cached) {
    const source = process.env.BRIDGE_ENV ? process.env : { ...process.env, BRIDGE_ENV: defaultEnvironment(process.env) };
    const parsed = envSchema.safeParse(source);
    if (parsed.success && needsRedis(parsed.data)) {
      throw new Error('Invalid configuration:\n  REDIS_URL: is required when LEASE_BACKEND or IDEMPOTENCY_BACKEND is redis');
    }
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
      throw new Error(`Invalid configuration:\n${problems}`);
    }
    cached = parsed.data;
  }
  return cached;
}

/**
 * Drops the configuration read so far: the next env() reads process.env again. A server reads its configuration
 * once; tests that change it (vi.stubEnv) call this so that the change, and its undoing, take effect.
 */
export function forgetEnv(): void {
  cached = undefined;
}

export type RetryPolicy = {
  maxAttempts: number;
  baseMs: number;
  factor: number;
  jitterMs: number;
  maxDelayMs: number;
};

/**
 * pessimistic: the row lock first; optimistic: version-checked writes with backoff, then the lock; adaptive:
 * version-checked while the intent is uncontended, the row lock at once once it is (docs/LOCKING.md).
 */
export type LockStrategy = 'pessimistic' | 'optimistic' | 'adaptive';

/** How many of the pool's connections may wait on row locks at once: as configured, else half the pool (at least one, never all of it but one). */
export function poolLockWaiters(e: Pick<Env, 'DB_POOL_SIZE' | 'DB_POOL_LOCK_WAITERS'> = env()): number {
  const configured = e.DB_POOL_LOCK_WAITERS || Math.floor(e.DB_POOL_SIZE / 2);
  return Math.max(1, Math.min(configured, e.DB_POOL_SIZE - 1));
}

/** The concurrency settings in force, as the console and replay runs show them. */
export function concurrencySettings() {
  const e = env();
  const retry: RetryPolicy = {
    maxAttempts: e.RETRY_MAX_ATTEMPTS,
    baseMs: e.RETRY_BASE_MS,
    factor: e.RETRY_FACTOR,
    jitterMs: e.RETRY_JITTER_MS,
    maxDelayMs: e.RETRY_MAX_DELAY_MS,
  };
  return {
    environment: e.BRIDGE_ENV,
    lockTimeoutMs: e.LOCK_TIMEOUT_MS,
    strategies: {
      update_status: e.LOCK_STRATEGY_UPDATE_STATUS as LockStrategy,
      bulk_update_status: 'pessimistic' as LockStrategy,
      reevaluate: e.LOCK_STRATEGY_REEVALUATE as LockStrategy,
      pipeline_execute: 'pessimistic' as LockStrategy,
      audit_log: 'none' as const,
    },
    retry,
    contentionMemoryMs: e.CONTENTION_MEMORY_MS,
    deadlockMaxAttempts: e.DEADLOCK_MAX_ATTEMPTS,
    idempotencyTtlHours: e.IDEMPOTENCY_TTL_HOURS,
    poolSize: e.DB_POOL_SIZE,
    poolLockWaiters: poolLockWaiters(e),
    preparedStatements: e.DB_PREPARED_STATEMENTS,
  };
}

export type ConcurrencySettings = ReturnType<typeof concurrencySettings>;
