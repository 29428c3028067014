import { AsyncLocalStorage } from 'node:async_hooks';
import { db } from '@/lib/db/client';

/**
 * Concurrency outcome counts, persisted per minute so every console instance sees the same rates.
 * Counts are gathered in memory and flushed within a second by one upsert; flushOutcomes() forces it
 * (tests, shutdown). Lock waits go into a histogram with these upper bounds (ms).
 */
export const OUTCOMES = [
  'success',
  'already_applied',
  'version_conflict',
  'retry',
  'stale_expected_version',
  'invalid_transition',
  'not_found',
  'lock_timeout',
  'deadlock_detected',
  'deadlock_retried',
  'deadlock_exhausted',
  'retries_exhausted',
  'pessimistic_fallback',
  'idempotent_replay',
  'fencing_token_stale',
] as const;
export type Outcome = (typeof OUTCOMES)[number];

export const LOCK_WAIT_BOUNDS_MS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000] as const;

type CountKey = string;
const counts = new Map<CountKey, number>();
const waits = new Map<CountKey, { n: number; sumMs: number }>();

/**
 * Someone who wants to see the outcomes of the commands run inside a piece of async work as they happen — the
 * contention replay counts each scenario's outcomes this way, so concurrent work elsewhere in the process never
 * mixes into them. Observing changes nothing about what is recorded and persisted.
 */
export type OutcomeObserver = (operation: string, outcome: Outcome, n: number) => void;
const observers = new AsyncLocalStorage<OutcomeObserver>();

export function observeOutcomes<T>(observer: OutcomeObserver, work: () => Promise<T>): Promise<T> {
  return observers.run(observer, work);
}

/**
 * Work done by a contention replay run. Its outcomes, lock waits and deadlocks are persisted apart (`is_replay`), so
 * the Contention page, /api/metrics and the alerts built on it show what operators and services caused, not what a
 * release engineer provoked on purpose; the replay reports its own figures.
 */
const replayWork = new AsyncLocalStorage<true>();

export function asReplayWork<T>(work: () => Promise<T>): Promise<T> {
  return replayWork.run(true, work);
}

export function inReplayWork(): boolean {
  return replayWork.getStore() === true;
}

let timer: NodeJS.Timeout | undefined;
let flushing: Promise<void> | undefined;

/** The current minute as ISO text; worked out once a minute, not on every count (this runs on every command). */
let minute = { text: '', endsAt: 0 };
function currentMinute(): string {
  const now = Date.now();
  if (now >= minute.endsAt || now < minute.endsAt - 60_000) {
    const start = now - (now % 60_000);
    minute = { text: new Date(start).toISOString(), endsAt: start + 60_000 };
  }
  return minute.text;
}

function schedule() {
  if (!timer) {
    timer = setTimeout(() => {
      timer = undefined;
      void flushOutcomes().catch((err) => console.error('[outcomes] flush failed:', err));
    }, 1000);
    timer.unref?.();
  }
}

export function recordOutcome(operation: string, outcome: Outcome, transition = '', n = 1): void {
  if (n <= 0) return;
  const key = JSON.stringify([currentMinute(), operation, transition, outcome, inReplayWork()]);
  counts.set(key, (counts.get(key) ?? 0) + n);
  observers.getStore()?.(operation, outcome, n);
  schedule();
}

export function lockWaitBucket(ms: number): number {
  return LOCK_WAIT_BOUNDS_MS.find((bound) => ms <= bound) ?? -1;
}

export function recordLockWait(operation: string, ms: number): void {
  const key = JSON.stringify([currentMinute(), operation, lockWaitBucket(ms), inReplayWork()]);
  const bucket = waits.get(key);
  if (bucket) {
    bucket.n += 1;
    bucket.sumMs += ms;
  } else {
    waits.set(key, { n: 1, sumMs: ms });
  }
  schedule();
}

async function writeBatch(countRows: [string, number][], waitRows: [string, { n: number; sumMs: number }][]) {
  if (countRows.length) {
    const parsed = countRows.map(([k, n]) => [...(JSON.parse(k) as [string, string, string, string, boolean]), n] as const);
    await db().$executeRaw`
      INSERT INTO outcome_counts (minute, operation, transition, outcome, is_replay, count)
      SELECT * FROM unnest(${parsed.map((r) => r[0])}::timestamptz[], ${parsed.map((r) => r[1])}::text[],
                           ${parsed.map((r) => r[2])}::text[], ${parsed.map((r) => r[3])}::text[], ${parsed.map((r) => r[4])}::boolean[],
                           ${parsed.map((r) => r[5])}::bigint[])
      ON CONFLICT (minute, operation, transition, outcome, is_replay) DO UPDATE SET count = outcome_counts.count + EXCLUDED.count`;
  }
  if (waitRows.length) {
    const parsed = waitRows.map(([k, w]) => [...(JSON.parse(k) as [string, string, number, boolean]), w.n, w.sumMs] as const);
    await db().$executeRaw`
      INSERT INTO lock_wait_buckets (minute, operation, le_ms, is_replay, count, sum_ms)
      SELECT * FROM unnest(${parsed.map((r) => r[0])}::timestamptz[], ${parsed.map((r) => r[1])}::text[],
                           ${parsed.map((r) => r[2])}::int[], ${parsed.map((r) => r[3])}::boolean[], ${parsed.map((r) => r[4])}::bigint[],
                           ${parsed.map((r) => r[5])}::float8[])
      ON CONFLICT (minute, operation, le_ms, is_replay) DO UPDATE
        SET count = lock_wait_buckets.count + EXCLUDED.count, sum_ms = lock_wait_buckets.sum_ms + EXCLUDED.sum_ms`;
  }
}

export async function flushOutcomes(): Promise<void> {
  if (flushing) await flushing;
  const countRows = [...counts.entries()];
  const waitRows = [...waits.entries()];
  counts.clear();
  waits.clear();
  if (!countRows.length && !waitRows.length) return;
  flushing = writeBatch(countRows, waitRows).catch((err) => {
    // Keep the counts for the next flush rather than lose them.
    for (const [k, n] of countRows) counts.set(k, (counts.get(k) ?? 0) + n);
    for (const [k, w] of waitRows) {
      const kept = waits.get(k);
      waits.set(k, kept ? { n: kept.n + w.n, sumMs: kept.sumMs + w.sumMs } : w);
    }
    schedule();
    throw err;
  });
  try {
    await flushing;
  } finally {
    flushing = undefined;
  }
}
