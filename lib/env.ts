import { z } from 'zod';

/**
 * All configuration, read and validated once. Defaults are the brief's §4 numbers. The lock strategy per
 * operation and the retry/timeout numbers are the rollout's feature flags: the console shows the values in force
 * and every replay run records them.
 */
const intFrom = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);
const strategy = (def: 'pessimistic' | 'optimistic') => z.enum(['pessimistic', 'optimistic']).default(def);

export const envSchema = z.object({
  DATABASE_URL: z.string().url().optional(),
  PORT: intFrom(3000, 1, 65535),
  /** Which environment this console serves; shown as a badge, and production disables the replay. */
  BRIDGE_ENV: z.enum(['development', 'staging', 'production']).default('development'),
  DB_POOL_SIZE: intFrom(10, 1, 200),
  LOCK_TIMEOUT_MS: intFrom(5000, 1, 600_000),
  LOCK_STRATEGY_UPDATE_STATUS: strategy('pessimistic'),
  LOCK_STRATEGY_REEVALUATE: strategy('optimistic'),
  RETRY_MAX_ATTEMPTS: intFrom(3, 1, 20),
  RETRY_BASE_MS: intFrom(100, 0, 60_000),
  RETRY_FACTOR: z.coerce.number().min(1).max(10).default(2),
  RETRY_JITTER_MS: intFrom(50, 0, 60_000),
  RETRY_MAX_DELAY_MS: intFrom(2000, 0, 600_000),
  DEADLOCK_MAX_ATTEMPTS: intFrom(3, 1, 20),
  IDEMPOTENCY_TTL_HOURS: intFrom(24, 24, 24 * 90),
});

export type Env = z.infer<typeof envSchema>;

let cached: Env | undefined;

export function env(): Env {
  if (!cached) {
    const parsed = envSchema.safeParse(process.env);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
      throw new Error(`Invalid configuration:\n${problems}`);
    }
    cached = parsed.data;
  }
  return cached;
}

export type RetryPolicy = {
  maxAttempts: number;
  baseMs: number;
  factor: number;
  jitterMs: number;
  maxDelayMs: number;
};

export type LockStrategy = 'pessimistic' | 'optimistic';

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
    deadlockMaxAttempts: e.DEADLOCK_MAX_ATTEMPTS,
    idempotencyTtlHours: e.IDEMPOTENCY_TTL_HOURS,
    poolSize: e.DB_POOL_SIZE,
  };
}

export type ConcurrencySettings = ReturnType<typeof concurrencySettings>;
