import { z } from 'zod';
import { db, type Tx } from '@/lib/db/client';
import { readDb } from '@/lib/db/read';
import { pressureReason } from '@/lib/db/sqlstate';
import { DatabaseUnderPressureError, ValidationError, VIEW_RETRY_AFTER_SECONDS } from '@/lib/shared/errors';
import {
  byDimension,
  counterDelta,
  LOCK_WAIT_BOUNDS_MS,
  outcomeTimeline,
  percentilesByOperation,
  percentileTimeline,
  totals,
  WINDOW_KEYS,
  windowBuckets,
  type OutcomeRow,
  type TimeoutRow,
  type WaitRow,
  type WindowKey,
} from './series';

/**
 * The Contention page's data: outcome counts and the lock-wait histogram the engine persists per minute
 * (outcome_counts, lock_wait_buckets), the deadlocks it recorded (deadlock_events, with Postgres' DETAIL), and
 * Postgres' own deadlock counter (pg_stat_database.deadlocks) beside them. Read in one short transaction under a
 * statement timeout, like the Locks page: it must not add to a struggling database's load. What contention replay
 * runs recorded (is_replay) is left out: the page shows what operators and services caused, and the Replay page
 * shows each run's own figures. Postgres' counter cannot tell them apart and counts every deadlock, so each replay run
 * snapshots it when it starts and ends (replay_runs.pg_deadlocks_*), and what runs added is subtracted here.
 */

export const contentionQuerySchema = z.object({
  window: z.enum(WINDOW_KEYS as [WindowKey, ...WindowKey[]], { error: `must be one of ${WINDOW_KEYS.join(', ')}` }).default('1h'),
});

export type RecentDeadlock = { id: string; operation: string; intentIds: string[]; detail: string; attempt: number; retried: boolean; at: string };

const LAST_BOUND = LOCK_WAIT_BOUNDS_MS[LOCK_WAIT_BOUNDS_MS.length - 1];

/** Postgres' counter as this console instance has seen it, for "+N in this window" (kept for a day, at most 2,000). */
const globalSamples = globalThis as unknown as { bridgePgDeadlockSamples?: { at: number; value: number }[] };
function samples(): { at: number; value: number }[] {
  return (globalSamples.bridgePgDeadlockSamples ??= []);
}
function noteSample(at: number, value: number): void {
  const list = samples();
  if (!list.length || at - list[list.length - 1].at >= 5_000 || list[list.length - 1].value !== value) list.push({ at, value });
  const dayAgo = at - 24 * 3600_000;
  while (list.length > 2000 || (list.length > 1 && list[0].at < dayAgo)) list.shift();
}

/** The first sample this console took at or after `from` (ms), for the replay deadlocks inside the same span. */
function samplesSince(from: number): Date | null {
  const first = samples().find((x) => x.at >= from);
  return first ? new Date(first.at) : null;
}

/**
 * The deadlocks replay runs added to Postgres' counter since its last reset: each run's end snapshot minus its start
 * snapshot (a reset during the run: the end snapshot alone), and for a run still going, the counter now minus its
 * start. `inWindow`: the same for runs still going or ended after `since`. Runs from before the snapshots existed, or
 * whose runner died before the end snapshot, cannot be subtracted: counted as `unmeasured`.
 */
async function replayDeadlocks(tx: Tx, pg: { deadlocks: bigint; statsReset: Date | null } | undefined, since: Date | null) {
  if (!pg) return { deadlocks: 0, runs: 0, unmeasured: 0, inWindow: 0 };
  const [row] = await tx.$queryRaw<{ deadlocks: bigint; runs: bigint; unmeasured: bigint; inWindow: bigint }[]>`
    WITH measured AS (
      SELECT finished_at, status,
             CASE WHEN status = 'running' THEN ${pg.deadlocks}::bigint - pg_deadlocks_start
                  WHEN pg_stats_reset_start IS NOT DISTINCT FROM pg_stats_reset_end THEN pg_deadlocks_end - pg_deadlocks_start
                  ELSE pg_deadlocks_end END AS added
      FROM replay_runs
      WHERE pg_deadlocks_start IS NOT NULL
        AND (CASE WHEN status = 'running' THEN pg_stats_reset_start ELSE pg_stats_reset_end END) IS NOT DISTINCT FROM ${pg.statsReset}::timestamptz
        AND (status = 'running' OR pg_deadlocks_end IS NOT NULL)
    )
    SELECT coalesce(sum(greatest(added, 0)), 0)::bigint AS deadlocks, count(*)::bigint AS runs,
           (SELECT count(*) FROM replay_runs r WHERE r.status <> 'running' AND r.pg_deadlocks_end IS NULL
              AND (${pg.statsReset}::timestamptz IS NULL OR r.created_at >= ${pg.statsReset}::timestamptz))::bigint AS unmeasured,
           coalesce(sum(greatest(added, 0)) FILTER (WHERE ${since}::timestamptz IS NOT NULL AND (status = 'running' OR finished_at >= ${since}::timestamptz)), 0)::bigint AS "inWindow"
    FROM measured`;
  return { deadlocks: Number(row.deadlocks), runs: Number(row.runs), unmeasured: Number(row.unmeasured), inWindow: Number(row.inWindow) };
}

type DeadlockStats = { deadlocks: bigint; statsReset: Date | null };

async function selectDeadlockStats(client: Tx): Promise<DeadlockStats> {
  const [row] = await client.$queryRaw<DeadlockStats[]>`
    SELECT deadlocks, stats_reset AS "statsReset" FROM pg_stat_database WHERE datname = current_database()`;
  return row;
}

export async function contentionReport(query: { window?: unknown } = {}) {
  const parsed = contentionQuerySchema.safeParse(query);
  if (!parsed.success) throw new ValidationError(parsed.error.issues.map((i) => ({ field: i.path.join('.') || 'query', message: i.message })));
  const { window } = parsed.data;

  const started = performance.now();
  let read;
  try {
    const client = await readDb();
    // Deadlocks are counted by the server they happen on: the primary's statistics, even when the rest is read on a
    // replica (whose own pg_stat_database counts none).
    const primaryStats = client === db() ? null : await selectDeadlockStats(db());
    read = await client.$transaction(
      async (tx) => {
        await tx.$executeRaw`SET LOCAL statement_timeout = '2s'`;
        await tx.$executeRaw`SET LOCAL lock_timeout = '100ms'`;
        const [{ now }] = await tx.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS now`;
        const { from, bucketSeconds } = windowBuckets(window, now);
        const outcomes = await tx.$queryRaw<OutcomeRow[]>`
          SELECT to_timestamp(floor(extract(epoch FROM minute) / ${bucketSeconds}::int) * ${bucketSeconds}::int) AS bucket,
                 operation, transition, outcome, sum(count)::bigint AS count
          FROM outcome_counts WHERE minute >= ${from} AND NOT is_replay
          GROUP BY 1, 2, 3, 4`;
        const waits = await tx.$queryRaw<WaitRow[]>`
          SELECT to_timestamp(floor(extract(epoch FROM minute) / ${bucketSeconds}::int) * ${bucketSeconds}::int) AS bucket,
                 operation, le_ms AS "leMs", sum(count)::bigint AS count
          FROM lock_wait_buckets WHERE minute >= ${from} AND NOT is_replay
          GROUP BY 1, 2, 3`;
        const timeouts = await tx.$queryRaw<TimeoutRow[]>`
          SELECT to_timestamp(floor(extract(epoch FROM minute) / ${bucketSeconds}::int) * ${bucketSeconds}::int) AS bucket,
                 operation, timeout_ms AS "timeoutMs", sum(count)::bigint AS count
          FROM lock_wait_timeouts WHERE minute >= ${from} AND NOT is_replay
          GROUP BY 1, 2, 3`;
        const pg = primaryStats ?? (await selectDeadlockStats(tx));
        const replay = await replayDeadlocks(tx, pg, samplesSince(from.getTime()));
        const [app] = await tx.$queryRaw<{ inWindow: bigint; retried: bigint; allTime: bigint }[]>`
          SELECT count(*) FILTER (WHERE at >= ${from}) AS "inWindow",
                 count(*) FILTER (WHERE at >= ${from} AND retried) AS retried,
                 count(*) AS "allTime"
          FROM deadlock_events WHERE NOT is_replay`;
        const recent = await tx.$queryRaw<{ id: bigint; operation: string; intentIds: string[]; detail: string; attempt: number; retried: boolean; at: Date }[]>`
          SELECT id, operation, intent_ids::text[] AS "intentIds", detail, attempt, retried, at
          FROM deadlock_events WHERE NOT is_replay ORDER BY at DESC, id DESC LIMIT 20`;
        return { now, from, outcomes, waits, timeouts, pg, replay, app, recent };
      },
      { maxWait: 2000, timeout: 5000 },
    );
  } catch (err) {
    const reason = pressureReason(err);
    if (reason) throw new DatabaseUnderPressureError(reason, VIEW_RETRY_AFTER_SECONDS);
    throw err;
  }
  const { now, from, outcomes, waits, timeouts, pg, replay, app, recent } = read;
  const pgDeadlocks = Number(pg?.deadlocks ?? 0);
  const delta = counterDelta(samples(), from.getTime(), { at: now.getTime(), value: pgDeadlocks });
  noteSample(now.getTime(), pgDeadlocks);

  return {
    window,
    from: from.toISOString(),
    to: now.toISOString(),
    tookMs: Math.round(performance.now() - started),
    bucketSeconds: windowBuckets(window, now).bucketSeconds,
    totals: totals(outcomes),
    timeline: outcomeTimeline(outcomes, window, now),
    byOperation: byDimension(outcomes, 'operation'),
    byTransition: byDimension(outcomes, 'transition'),
    lockWait: {
      lastBoundMs: LAST_BOUND,
      timeline: percentileTimeline(waits, timeouts, window, now, LAST_BOUND),
      byOperation: percentilesByOperation(waits, timeouts, LAST_BOUND),
    },
    deadlocks: {
      postgres: {
        total: pgDeadlocks,
        statsReset: pg?.statsReset?.toISOString() ?? null,
        inWindow: delta,
        replay: { deadlocks: replay.deadlocks, runs: replay.runs, unmeasuredRuns: replay.unmeasured },
        // What the counter says once the replay runs' own deadlocks are taken out (never below zero).
        outsideReplay: Math.max(0, pgDeadlocks - replay.deadlocks),
        inWindowOutsideReplay: delta ? { since: delta.since, count: Math.max(0, delta.count - replay.inWindow) } : null,
      },
      app: { inWindow: Number(app.inWindow), retriedInWindow: Number(app.retried), allTime: Number(app.allTime) },
      recent: recent.map((r): RecentDeadlock => ({ ...r, id: String(r.id), at: r.at.toISOString() })),
    },
  };
}

export type ContentionReport = Awaited<ReturnType<typeof contentionReport>>;
