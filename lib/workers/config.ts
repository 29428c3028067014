import { env } from '@/lib/env';

/** A worker's settings (docs/CONFIGURATION.md, docs/WORKERS.md). Read from the environment; tests pass their own. */
export type WorkerConfig = {
  concurrency: number;
  batchSize: number;
  pollMs: number;
  leaseMs: number;
  heartbeatMs: number;
  rescueMs: number;
  maxAttempts: number;
  retry: { baseMs: number; jitterMs: number; maxDelayMs: number };
  shutdownGraceMs: number;
  bridges: readonly string[];
};

export function workerConfig(overrides: Partial<WorkerConfig> = {}): WorkerConfig {
  const e = env();
  return {
    concurrency: e.WORKER_CONCURRENCY,
    batchSize: e.WORKER_BATCH_SIZE,
    pollMs: e.WORKER_POLL_MS,
    leaseMs: e.WORKER_LEASE_MS,
    heartbeatMs: e.WORKER_HEARTBEAT_MS,
    rescueMs: e.WORKER_RESCUE_MS,
    maxAttempts: e.WORKER_MAX_ATTEMPTS,
    retry: { baseMs: e.WORKER_RETRY_BASE_MS, jitterMs: e.WORKER_RETRY_JITTER_MS, maxDelayMs: e.WORKER_RETRY_MAX_MS },
    shutdownGraceMs: e.WORKER_SHUTDOWN_GRACE_MS,
    bridges: e.PIPELINE_BRIDGES,
    ...overrides,
  };
}
