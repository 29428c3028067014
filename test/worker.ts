import { inject } from 'vitest';

/** This test worker's number, 1 … TEST_WORKERS (vitest numbers the workers it keeps running files in). */
export function workerNumber(): number {
  return Number(process.env.VITEST_POOL_ID ?? 1);
}

/**
 * The Redis this worker's files use: the run's throw-away server, database number = the worker's, so one worker's
 * FLUSHDB between tests leaves another's keys alone. '' when the run has no Redis.
 */
export function workerRedisUrl(): string {
  const base = inject('redisUrl');
  if (!base) return '';
  const url = new URL(base);
  url.pathname = `/${workerNumber()}`;
  return url.toString();
}
