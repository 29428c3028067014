import type { Tx } from '@/lib/db/client';

/**
 * What /api/metrics reads, without what contention replay runs recorded (is_replay): alerts watch real traffic. Everything comes from Postgres — the persisted outcome counts, lock-wait histogram and
 * deadlock events every console instance writes, and pg_stat_activity — so every instance exports the same values.
 */

export type OutcomeTotal = { operation: string; outcome: string; n: number };
export async function selectOutcomeTotals(tx: Tx): Promise<OutcomeTotal[]> {
  return tx.$queryRaw<OutcomeTotal[]>`
    SELECT operation, outcome, sum(count)::float8 AS n FROM outcome_counts WHERE NOT is_replay GROUP BY operation, outcome ORDER BY operation, outcome`;
}

export type LockWaitTotal = { operation: string; leMs: number; n: number; sumMs: number };
export async function selectLockWaitTotals(tx: Tx): Promise<LockWaitTotal[]> {
  return tx.$queryRaw<LockWaitTotal[]>`
    SELECT operation, le_ms AS "leMs", sum(count)::float8 AS n, sum(sum_ms)::float8 AS "sumMs"
    FROM lock_wait_buckets WHERE NOT is_replay GROUP BY operation, le_ms ORDER BY operation, le_ms`;
}

export async function selectDeadlockTotals(tx: Tx): Promise<{ detections: number; retries: number }> {
  const rows = await tx.$queryRaw<{ detections: number; retries: number }[]>`
    SELECT count(*)::float8 AS detections, count(*) FILTER (WHERE retried)::float8 AS retries FROM deadlock_events WHERE NOT is_replay`;
  return rows[0] ?? { detections: 0, retries: 0 };
}

/**
 * Transactions of this database that hold row locks right now, by the operation their label names
 * (`bridge:<operation>:<intent>`): a row lock is not listed in pg_locks, but its transaction holds its own
 * transactionid lock, and a backend waiting for a lock is a waiter, not a holder.
 */
export async function selectActiveLocks(tx: Tx): Promise<{ lockType: string; n: number }[]> {
  return tx.$queryRaw<{ lockType: string; n: number }[]>`
    SELECT split_part(a.application_name, ':', 2) AS "lockType", count(*)::float8 AS n
    FROM pg_stat_activity a
    WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
      AND a.application_name LIKE 'bridge:%:%' AND a.xact_start IS NOT NULL
      AND a.wait_event_type IS DISTINCT FROM 'Lock'
      AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted AND l.locktype = 'transactionid')
    GROUP BY 1 ORDER BY 1`;
}

export type LockEpisodeTotals = {
  /** Ended episodes per duration bucket (le_ms, -1 beyond the last bound); not cumulative. */
  buckets: { leMs: number; n: number; sumMs: number }[];
  /** Episodes summarised in storms (never timed one by one). */
  summarised: number;
  inProgress: number;
  /** The longest blocking going on, in ms (0 when none); episodes the sampler has not seen for 30 s do not count. */
  longestInProgressMs: number;
};

/** The lock history's counts: ended episodes by duration (kept whatever the retention deletes), and those going on. */
export async function selectLockEpisodeTotals(tx: Tx): Promise<LockEpisodeTotals> {
  const [row] = await tx.$queryRaw<{ buckets: { leMs: number; n: number; sumMs: number }[]; inProgress: number; longestMs: number }[]>`
    SELECT (SELECT coalesce(json_agg(json_build_object('leMs', le_ms, 'n', count, 'sumMs', sum_ms) ORDER BY le_ms), '[]') FROM lock_episode_totals) AS buckets,
           (SELECT count(*)::int FROM lock_episodes WHERE ended_at IS NULL) AS "inProgress",
           (SELECT coalesce(max(extract(epoch FROM last_seen_at - started_at) * 1000), 0)::float8 FROM lock_episodes
             WHERE ended_at IS NULL AND last_seen_at > now() - interval '30 seconds') AS "longestMs"`;
  const buckets = row.buckets.map((b) => ({ leMs: Number(b.leMs), n: Number(b.n), sumMs: Number(b.sumMs) }));
  return {
    buckets: buckets.filter((b) => b.leMs !== -2),
    summarised: buckets.find((b) => b.leMs === -2)?.n ?? 0,
    inProgress: row.inProgress,
    longestInProgressMs: row.longestMs,
  };
}
