import { AsyncLocalStorage } from 'node:async_hooks';
import { LOCK_WAIT_BOUNDS_MS } from '@/lib/contention/series';
import { db } from '@/lib/db/client';

/**
 * Concurrency outcome counts, persisted per minute so every console instance sees the same rates.
 * Counts are gathered in memory and flushed within a second by one upsert; flushOutcomes() forces it
 * (tests, shutdown). Lock waits go into a histogram with the upper bounds of LOCK_WAIT_BOUNDS_MS.
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

type CountKey = string;
const counts = new Map<CountKey, number>();
const waits = new Map<CountKey, { n: number; sumMs: number }>();
const timeouts = new Map<CountKey, number>();
const perIntent = new Map<CountKey, number>();

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

/**
 * Counts `n` outcomes of an operation. `intentIds` names the intents they happened to: every outcome but a plain
 * success is also kept per intent and minute (intent_outcome_minutes), so the Contention page can open the Intents
 * page on the intents behind a figure. Successes are in the audit log already, and they are most of the traffic.
 */
export function recordOutcome(operation: string, outcome: Outcome, transition = '', n = 1, intentIds: readonly string[] = []): void {
  if (n <= 0) return;
  const at = currentMinute();
  const replay = inReplayWork();
  const key = JSON.stringify([at, operation, transition, outcome, replay]);
  counts.set(key, (counts.get(key) ?? 0) + n);
  // Replay work is left out: its intents are hidden from the Intents page, and the Contention page leaves it out too.
  if (outcome !== 'success' && !replay) {
    for (const id of new Set(intentIds)) {
      const k = JSON.stringify([outcome, at, operation, id]);
      perIntent.set(k, (perIntent.get(k) ?? 0) + 1);
    }
  }
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

/**
 * A lock wait that ran out after `timeoutMs` (lock_timeout; a NOWAIT refusal never waited and is not one): it
 * waited at least that long, which is what the lock-wait percentiles count it as. Kept apart from the histogram of
 * acquired locks, which /api/metrics exports as acquisitions.
 */
export function recordLockTimeoutWait(operation: string, timeoutMs: number): void {
  const key = JSON.stringify([currentMinute(), operation, Math.max(0, Math.round(timeoutMs)), inReplayWork()]);
  timeouts.set(key, (timeouts.get(key) ?? 0) + 1);
  schedule();
}

type Batch = { countRows: [string, number][]; waitRows: [string, { n: number; sumMs: number }][]; timeoutRows: [string, number][]; intentRows: [string, number][] };

/** One transaction for the whole batch: a failed flush is kept and written again whole, never half counted twice. */
async function writeBatch({ countRows, waitRows, timeoutRows, intentRows }: Batch) {
  const statements = [];
  if (countRows.length) {
    const parsed = countRows.map(([k, n]) => [...(JSON.parse(k) as [string, string, string, string, boolean]), n] as const);
    statements.push(db().$executeRaw`
      INSERT INTO outcome_counts (minute, operation, transition, outcome, is_replay, count)
      SELECT * FROM unnest(${parsed.map((r) => r[0])}::timestamptz[], ${parsed.map((r) => r[1])}::text[],
                           ${parsed.map((r) => r[2])}::text[], ${parsed.map((r) => r[3])}::text[], ${parsed.map((r) => r[4])}::boolean[],
                           ${parsed.map((r) => r[5])}::bigint[])
      ON CONFLICT (minute, operation, transition, outcome, is_replay) DO UPDATE SET count = outcome_counts.count + EXCLUDED.count`);
  }
  if (waitRows.length) {
    const parsed = waitRows.map(([k, w]) => [...(JSON.parse(k) as [string, string, number, boolean]), w.n, w.sumMs] as const);
    statements.push(db().$executeRaw`
      INSERT INTO lock_wait_buckets (minute, operation, le_ms, is_replay, count, sum_ms)
      SELECT * FROM unnest(${parsed.map((r) => r[0])}::timestamptz[], ${parsed.map((r) => r[1])}::text[],
                           ${parsed.map((r) => r[2])}::int[], ${parsed.map((r) => r[3])}::boolean[], ${parsed.map((r) => r[4])}::bigint[],
                           ${parsed.map((r) => r[5])}::float8[])
      ON CONFLICT (minute, operation, le_ms, is_replay) DO UPDATE
        SET count = lock_wait_buckets.count + EXCLUDED.count, sum_ms = lock_wait_buckets.sum_ms + EXCLUDED.sum_ms`);
  }
  if (timeoutRows.length) {
    const parsed = timeoutRows.map(([k, n]) => [...(JSON.parse(k) as [string, string, number, boolean]), n] as const);
    statements.push(db().$executeRaw`
      INSERT INTO lock_wait_timeouts (minute, operation, timeout_ms, is_replay, count)
      SELECT * FROM unnest(${parsed.map((r) => r[0])}::timestamptz[], ${parsed.map((r) => r[1])}::text[],
                           ${parsed.map((r) => r[2])}::int[], ${parsed.map((r) => r[3])}::boolean[], ${parsed.map((r) => r[4])}::bigint[])
      ON CONFLICT (minute, operation, timeout_ms, is_replay) DO UPDATE SET count = lock_wait_timeouts.count + EXCLUDED.count`);
  }
  if (intentRows.length) {
    const parsed = intentRows.map(([k, n]) => [...(JSON.parse(k) as [string, string, string, string]), n] as const);
    statements.push(db().$executeRaw`
      INSERT INTO intent_outcome_minutes (outcome, minute, operation, intent_id, count)
      SELECT * FROM unnest(${parsed.map((r) => r[0])}::text[], ${parsed.map((r) => r[1])}::timestamptz[],
                           ${parsed.map((r) => r[2])}::text[], ${parsed.map((r) => r[3])}::uuid[], ${parsed.map((r) => r[4])}::bigint[])
      ON CONFLICT (outcome, minute, operation, intent_id) DO UPDATE SET count = intent_outcome_minutes.count + EXCLUDED.count`);
  }
  await db().$transaction(statements);
}

export async function flushOutcomes(): Promise<void> {
  if (flushing) await flushing;
  // Sorted by key: instances flushing the same minute at once upsert in one order and cannot deadlock each other.
  const sorted = <V>(map: Map<string, V>) => [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const batch: Batch = { countRows: sorted(counts), waitRows: sorted(waits), timeoutRows: sorted(timeouts), intentRows: sorted(perIntent) };
  counts.clear();
  waits.clear();
  timeouts.clear();
  perIntent.clear();
  if (!batch.countRows.length && !batch.waitRows.length && !batch.timeoutRows.length && !batch.intentRows.length) return;
  flushing = writeBatch(batch).catch((err) => {
    // Keep the counts for the next flush rather than lose them.
    const keep = (map: Map<string, number>, rows: [string, number][]) => {
      for (const [k, n] of rows) map.set(k, (map.get(k) ?? 0) + n);
    };
    keep(counts, batch.countRows);
    keep(timeouts, batch.timeoutRows);
    keep(perIntent, batch.intentRows);
    for (const [k, w] of batch.waitRows) {
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
