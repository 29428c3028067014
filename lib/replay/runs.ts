import { Prisma } from '@/generated/prisma/client';
import { recordAuditEvent } from '@/lib/audit/record';
import { db, type Tx } from '@/lib/db/client';
import { SQLSTATE, sqlState } from '@/lib/db/sqlstate';
import { isUuid, looksLikeIdPrefix, uuidPrefixRange } from '@/lib/search/parse';
import { ReplayInProgressError } from './errors';
import type { Verdict, ReplayRunView, RunConfig, RunDoor, RunProgress, RunStatus, ScenarioName, ScenarioResult } from './types';
import { failedChecks, unjudgedChecks } from './verdict';

/**
 * replay_runs: the record of every run, and the coordination between console instances — the partial unique index
 * allows one `running` row at a time, the runner's heartbeat tells a live run from an abandoned one, and a cancel
 * is a flag any instance can set and the runner polls. A run's start and its end are written with their audit
 * entries, in one transaction each.
 */

/** A runner that has not written for this long has died with its process; its run no longer blocks new ones. */
export const ABANDONED_AFTER_MS = 60_000;

type RunRow = Omit<ReplayRunView, 'createdAt' | 'heartbeatAt' | 'finishedAt' | 'pgDeadlocks' | 'pinnedAt'> & {
  createdAt: Date;
  heartbeatAt: Date;
  finishedAt: Date | null;
  pgDeadlocks: bigint | null;
  pinnedAt: Date | null;
};

function toView(row: RunRow): ReplayRunView {
  return {
    ...row,
    pgDeadlocks: row.pgDeadlocks === null ? null : Number(row.pgDeadlocks),
    results: Array.isArray(row.results) ? row.results : [],
    createdAt: row.createdAt.toISOString(),
    heartbeatAt: row.heartbeatAt.toISOString(),
    finishedAt: row.finishedAt?.toISOString() ?? null,
    pinnedAt: row.pinnedAt?.toISOString() ?? null,
  };
}

const COLUMNS = Prisma.raw(`id::text AS id, status, verdict, door, requested_by AS "requestedBy", environment, scenarios, config, progress, results,
  error, cancel_requested AS "cancelRequested", cancelled_by AS "cancelledBy", runner, created_at AS "createdAt",
  heartbeat_at AS "heartbeatAt", finished_at AS "finishedAt", pinned_at AS "pinnedAt", pinned_by AS "pinnedBy", pin_note AS "pinNote",
  CASE WHEN pg_stats_reset_start IS NOT DISTINCT FROM pg_stats_reset_end THEN pg_deadlocks_end - pg_deadlocks_start ELSE pg_deadlocks_end END AS "pgDeadlocks"`);

/** Marks runs whose runner stopped heartbeating as failed, so they stop blocking and say what happened (audited as their finish). */
export async function abandonStaleRuns(): Promise<number> {
  return db().$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ id: string; requestedBy: string; error: string }[]>`
      UPDATE replay_runs SET status = 'failed', finished_at = now(),
        error = 'abandoned: its runner (' || runner || ') stopped reporting; the process probably stopped mid-run'
      WHERE status = 'running' AND heartbeat_at < now() - ${`${ABANDONED_AFTER_MS} milliseconds`}::interval
      RETURNING id::text AS id, requested_by AS "requestedBy", error`;
    for (const r of rows) await recordAuditEvent({ action: 'replay_finished', actor: r.requestedBy, details: { runId: r.id, status: 'failed', verdict: null, error: r.error } }, tx);
    return rows.length;
  });
}

export async function insertRun(args: {
  door: RunDoor;
  requestedBy: string;
  environment: string;
  scenarios: ScenarioName[];
  config: RunConfig;
  progress: RunProgress;
  runner: string;
}): Promise<ReplayRunView> {
  try {
    return await db().$transaction(async (tx) => {
      const run = await insertRunRow(tx, args);
      await recordAuditEvent(
        {
          action: 'replay_started',
          actor: args.requestedBy,
          details: { runId: run.id, door: args.door, environment: args.environment, scenarios: args.scenarios.length, size: args.config.sizePreset, strategies: args.config.strategyOverrides ?? {} },
        },
        tx,
      );
      return run;
    });
  } catch (err) {
    if (sqlState(err) === SQLSTATE.uniqueViolation) throw new ReplayInProgressError(await runningRun());
    throw err;
  }
}

async function insertRunRow(tx: Tx, args: Parameters<typeof insertRun>[0]): Promise<ReplayRunView> {
  const rows = await tx.$queryRaw<RunRow[]>`
    INSERT INTO replay_runs (id, status, door, requested_by, environment, scenarios, config, progress, runner, pg_deadlocks_start, pg_stats_reset_start)
    SELECT gen_random_uuid(), 'running', ${args.door}, ${args.requestedBy}, ${args.environment}, ${args.scenarios}::text[],
           ${JSON.stringify(args.config)}::jsonb, ${JSON.stringify(args.progress)}::jsonb, ${args.runner}, c.deadlocks, c.reset
    FROM ${PG_DEADLOCK_COUNTER} c
    RETURNING ${COLUMNS}`;
  return toView(rows[0]);
}

async function runningRun(): Promise<{ id: string; requestedBy: string; createdAt: string; door: string } | null> {
  const rows = await db().$queryRaw<{ id: string; requestedBy: string; createdAt: Date; door: string }[]>`
    SELECT id::text AS id, requested_by AS "requestedBy", created_at AS "createdAt", door FROM replay_runs WHERE status = 'running' LIMIT 1`;
  return rows[0] ? { ...rows[0], createdAt: rows[0].createdAt.toISOString() } : null;
}

/** Progress and heartbeat in one write; answers whether a cancel was asked for (and by whom). */
export async function saveProgress(id: string, progress: RunProgress, results: ScenarioResult[]): Promise<{ cancelRequested: boolean; cancelledBy: string | null }> {
  const rows = await db().$queryRaw<{ cancelRequested: boolean; cancelledBy: string | null }[]>`
    UPDATE replay_runs SET progress = ${JSON.stringify(progress)}::jsonb, results = ${JSON.stringify(results)}::jsonb, heartbeat_at = now()
    WHERE id = ${id}::uuid
    RETURNING cancel_requested AS "cancelRequested", cancelled_by AS "cancelledBy"`;
  return rows[0] ?? { cancelRequested: true, cancelledBy: null };
}

/**
 * Postgres' own deadlock counter and its last reset. Backends report their counts to it asynchronously: an idle
 * backend that reported less than a second ago waits 10 s before reporting again (PostgreSQL's PGSTAT_IDLE_INTERVAL),
 * which is why a run waits for it to settle before its end snapshot (settleDeadlockCounter).
 */
const PG_DEADLOCK_COUNTER = Prisma.raw(`(SELECT (SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()) AS deadlocks,
  (SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()) AS reset)`);

/** How many deadlocks Postgres' counter has gained since the run's start snapshot (null: no snapshot, or it was reset). */
export async function deadlocksSinceStart(id: string): Promise<number | null> {
  const rows = await db().$queryRaw<{ added: bigint | null }[]>`
    SELECT CASE WHEN c.reset IS NOT DISTINCT FROM r.pg_stats_reset_start THEN c.deadlocks - r.pg_deadlocks_start END AS added
    FROM replay_runs r, ${PG_DEADLOCK_COUNTER} c WHERE r.id = ${id}::uuid`;
  return rows[0]?.added === null || rows[0]?.added === undefined ? null : Number(rows[0].added);
}

/** How long a finished run waits at most for Postgres' counter to show the deadlocks the run saw itself. */
export const COUNTER_SETTLE_MS = 12_000;

/**
 * Waits (bounded) until Postgres' deadlock counter has counted at least the deadlocks the run's own calls met, so
 * the end snapshot includes them; the counter may lag by the reporting delay of the backends involved.
 */
export async function settleDeadlockCounter(id: string, seenByRun: number, options: { timeoutMs?: number; pollMs?: number } = {}): Promise<boolean> {
  const deadline = Date.now() + (options.timeoutMs ?? COUNTER_SETTLE_MS);
  for (;;) {
    const added = await deadlocksSinceStart(id);
    if (added === null || added >= seenByRun) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200));
  }
}

/**
 * Records the end of a run, with its audit entry (the outcome: status, verdict, checks missed and not judged),
 * written by the person who started it, or who cancelled it.
 */
export async function finishRun(
  id: string,
  args: { status: Exclude<RunStatus, 'running'>; verdict: Verdict | null; progress: RunProgress; results: ScenarioResult[]; error: string | null },
): Promise<ReplayRunView> {
  return db().$transaction(async (tx) => {
    const run = await finishRunRow(tx, id, args);
    const details = { runId: run.id, status: run.status, verdict: run.verdict, missed: failedChecks(run.results).length, notJudged: unjudgedChecks(run.results).length, error: run.error };
    await recordAuditEvent({ action: 'replay_finished', actor: (run.status === 'cancelled' && run.cancelledBy) || run.requestedBy, details }, tx);
    return run;
  });
}

async function finishRunRow(tx: Tx, id: string, args: Parameters<typeof finishRun>[1]): Promise<ReplayRunView> {
  const rows = await tx.$queryRaw<RunRow[]>`
    UPDATE replay_runs r SET status = ${args.status}, verdict = ${args.verdict}, progress = ${JSON.stringify(args.progress)}::jsonb,
           results = ${JSON.stringify(args.results)}::jsonb, error = ${args.error}, finished_at = now(), heartbeat_at = now(),
           pg_deadlocks_end = c.deadlocks, pg_stats_reset_end = c.reset
    FROM ${PG_DEADLOCK_COUNTER} c
    WHERE r.id = ${id}::uuid RETURNING ${COLUMNS}`;
  return toView(rows[0]);
}

/** Sets the cancel flag of a running run; false when it is not running (finished, or never existed). */
export async function requestCancel(id: string, by: string): Promise<boolean> {
  const n = await db().$executeRaw`
    UPDATE replay_runs SET cancel_requested = true, cancelled_by = ${by} WHERE id = ${id}::uuid AND status = 'running'`;
  return n > 0;
}

/**
 * The run a link names: its whole id, or the first 8 or more characters the page shows of it. `missing` when no
 * run has it, `several` when more than one starts so, `invalid` when it is neither.
 */
export async function resolveRunRef(ref: string): Promise<{ id: string } | { problem: 'missing' | 'several' | 'invalid' }> {
  const text = ref.trim().toLowerCase();
  if (!looksLikeIdPrefix(text)) return { problem: 'invalid' };
  if (isUuid(text)) return (await getRun(text)) ? { id: text } : { problem: 'missing' };
  const { low, high } = uuidPrefixRange(text);
  const rows = await db().$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM replay_runs WHERE id BETWEEN ${low}::uuid AND ${high}::uuid ORDER BY id LIMIT 2`;
  return rows.length === 1 ? { id: rows[0].id } : { problem: rows.length ? 'several' : 'missing' };
}

export async function getRun(id: string): Promise<ReplayRunView | null> {
  const rows = await db().$queryRaw<RunRow[]>`SELECT ${COLUMNS} FROM replay_runs WHERE id = ${id}::uuid`;
  return rows[0] ? toView(rows[0]) : null;
}

export async function listRuns(limit = 20): Promise<ReplayRunView[]> {
  const rows = await db().$queryRaw<RunRow[]>`SELECT ${COLUMNS} FROM replay_runs ORDER BY created_at DESC, id DESC LIMIT ${limit}`;
  return rows.map(toView);
}

/** The run to compare with: the latest one before it that ran to the end (a cancelled or broken run is no yardstick). */
export async function previousFinishedRun(run: Pick<ReplayRunView, 'id' | 'createdAt'>): Promise<ReplayRunView | null> {
  return (await finishedRunsBefore(run, 1))[0] ?? null;
}

/** The latest finished runs before `run`, newest first: the previous one, and the history the run-to-run spread comes from. */
export async function finishedRunsBefore(run: Pick<ReplayRunView, 'id' | 'createdAt'>, limit: number): Promise<ReplayRunView[]> {
  const rows = await db().$queryRaw<RunRow[]>`
    SELECT ${COLUMNS} FROM replay_runs WHERE status = 'finished' AND created_at < ${new Date(run.createdAt)}::timestamptz AND id <> ${run.id}::uuid
    ORDER BY created_at DESC, id DESC LIMIT ${limit}`;
  return rows.map(toView);
}

/** An earlier run a release engineer may compare a run with: the Replay page's "compare with" choice. */
export type CompareCandidate = { id: string; createdAt: string; requestedBy: string; verdict: Verdict | null; sizePreset: string; scenarios: ScenarioName[]; pinned: boolean };

/** Earlier finished runs that share at least one scenario with `run`, newest first. */
export async function comparableRunsBefore(run: Pick<ReplayRunView, 'id' | 'createdAt' | 'scenarios'>, limit: number): Promise<CompareCandidate[]> {
  const rows = await db().$queryRaw<(Omit<CompareCandidate, 'createdAt'> & { createdAt: Date })[]>`
    SELECT id::text AS id, created_at AS "createdAt", requested_by AS "requestedBy", verdict, coalesce(config->>'sizePreset', 'full') AS "sizePreset",
           scenarios, pinned_at IS NOT NULL AS pinned
    FROM replay_runs
    WHERE status = 'finished' AND created_at < ${new Date(run.createdAt)}::timestamptz AND id <> ${run.id}::uuid AND scenarios && ${run.scenarios}::text[]
    ORDER BY created_at DESC, id DESC LIMIT ${limit}`;
  return rows.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() }));
}
