import { Prisma } from '@/generated/prisma/client';
import type { Tx } from '@/lib/db/client';
import type { JsonObject, JsonValue } from '@/lib/intents/json';
import { fenceCondition } from '@/lib/leases/fencing';
import type { Fencing } from '@/lib/leases/schemas';
import type { IntentStatus } from '@/lib/intents/state-machine';
import type { Intent } from '@/lib/intents/types';
import type { PipelineDoor, PipelineMode, PipelineRun, RunStatus, StepStatus } from './types';

/**
 * The pipeline's statements: one per operation, named for what it does, each returning what happened. A worker's
 * run passes its claim token, and every write is then conditional on the claim still being that token's: the claim
 * row is read FOR SHARE in the same statement, so a rescue that commits first makes the write do nothing, and a
 * rescue that comes second waits for the write to commit. Runs from the API or the console pass no token.
 */

/** `held`: true without a token; with one, whether intent_work still holds that running claim (row read FOR SHARE). */
function claimHeld(intentId: string, claimToken: string | null): Prisma.Sql {
  return Prisma.sql`
    held_claim AS (
      SELECT intent_id FROM intent_work
      WHERE intent_id = ${intentId}::uuid AND claim_token = ${claimToken}::bigint AND state = 'running'
      FOR SHARE
    ), claim AS (
      SELECT (${claimToken}::bigint IS NULL OR EXISTS (SELECT 1 FROM held_claim)) AS held
    )`;
}

export type StartedRun = {
  intentStatus: IntentStatus | null;
  claimHeld: boolean;
  runId: string | null;
  round: number | null;
  startedAt: Date | null;
  /** Results this round has recorded, by bridge: replayed instead of run again. */
  recorded: Record<string, JsonValue>;
};

/**
 * Opens a run of a non-terminal intent (audited), in the intent's current round, and returns what the round has
 * already recorded. Runs of this intent still marked running are marked abandoned: the caller holds the execution
 * lock, so they died with their process. A fenced run's token is checked against its fence by the same statement
 * (a worker's claim token, checked as held there too, advances its claim fence); a refused one aborts it with
 * SQLSTATE BF409 (lib/leases/fencing.ts), so nothing is recorded.
 */
export async function startRun(
  client: Tx,
  args: { intentId: string; mode: PipelineMode; door: PipelineDoor; actor: string; claimToken: string | null; fencing: Fencing | null },
): Promise<StartedRun> {
  const { intentId: id, claimToken: token } = args;
  const [row] = await client.$queryRaw<StartedRun[]>`
    WITH ${claimHeld(id, token)},
    intent AS (SELECT status FROM intents WHERE id = ${id}::uuid),
    work AS (SELECT round FROM intent_work WHERE intent_id = ${id}::uuid),
    abandoned AS (
      UPDATE pipeline_runs SET status = 'abandoned', finished_at = now()
      WHERE intent_id = ${id}::uuid AND status = 'running' AND (SELECT held FROM claim)
      RETURNING id
    ), abandoned_steps AS (
      UPDATE pipeline_steps SET status = 'abandoned', finished_at = now()
      WHERE run_id IN (SELECT id FROM abandoned) AND status = 'running'
    ), run AS (
      INSERT INTO pipeline_runs (intent_id, round, mode, door, actor, claim_token)
      SELECT ${id}::uuid, COALESCE((SELECT round FROM work), 1), ${args.mode}, ${args.door}, ${args.actor}, ${token}::bigint
      FROM intent i, claim c
      WHERE c.held AND i.status NOT IN ('COMPLETED', 'FAILED') ${fenceCondition(args.fencing)}
      RETURNING id, round, started_at
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT ${id}::uuid, 'pipeline_started', ${args.actor},
             jsonb_build_object('runId', r.id, 'mode', ${args.mode}::text, 'door', ${args.door}::text, 'round', r.round, 'claimToken', ${token}::text)
      FROM run r
    )
    SELECT (SELECT status::text FROM intent) AS "intentStatus",
           (SELECT held FROM claim) AS "claimHeld",
           r.id::text AS "runId", r.round, r.started_at AS "startedAt",
           COALESCE((SELECT jsonb_object_agg(s.bridge, COALESCE(s.result, 'null'::jsonb))
                     FROM pipeline_steps s
                     WHERE s.intent_id = ${id}::uuid AND s.round = r.round AND s.status = 'completed'), '{}'::jsonb) AS recorded
    FROM (SELECT 1) AS one LEFT JOIN run r ON true`;
  return row;
}

export type StartedStep = {
  stepId: bigint | null;
  stepStatus: StepStatus | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  status: IntentStatus;
  version: number;
  payload: JsonObject;
};

/**
 * Records a step's start with its audit event and returns the intent as the step sees it. The step is `replayed`
 * when the round recorded this bridge's result already, `skipped` when the intent's status is not one the bridge
 * runs on, `running` otherwise. No step row (stepId null) means the claim is lost.
 */
export async function startStep(
  client: Tx,
  args: { intentId: string; runId: string; round: number; position: number; bridge: string; accepts: readonly IntentStatus[]; replayed: JsonValue | undefined; actor: string; claimToken: string | null },
): Promise<StartedStep> {
  const { intentId: id, claimToken: token } = args;
  const replayed = args.replayed !== undefined;
  const recorded = replayed ? JSON.stringify(args.replayed) : null;
  const [row] = await client.$queryRaw<StartedStep[]>`
    WITH ${claimHeld(id, token)},
    intent AS (SELECT status, version, payload FROM intents WHERE id = ${id}::uuid),
    step AS (
      INSERT INTO pipeline_steps (run_id, intent_id, round, position, bridge, status, claim_token, finished_at, result)
      SELECT ${args.runId}::uuid, ${id}::uuid, ${args.round}, ${args.position}, ${args.bridge}, k.kind, ${token}::bigint,
             CASE WHEN k.kind = 'running' THEN NULL ELSE now() END, ${recorded}::jsonb
      FROM intent i, claim c,
           LATERAL (SELECT CASE WHEN ${replayed}::boolean THEN 'replayed'
                                WHEN i.status::text = ANY(${[...args.accepts]}::text[]) THEN 'running'
                                ELSE 'skipped' END AS kind) k
      WHERE c.held
      RETURNING id, status, started_at, finished_at
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT ${id}::uuid, CASE s.status WHEN 'running' THEN 'bridge_started' ELSE 'bridge_' || s.status END, ${args.actor},
             jsonb_build_object('runId', ${args.runId}::text, 'bridge', ${args.bridge}::text, 'position', ${args.position}::int,
                                'status', (SELECT status::text FROM intent), 'version', (SELECT version FROM intent))
      FROM step s
    )
    SELECT s.id AS "stepId", s.status AS "stepStatus", s.started_at AS "startedAt", s.finished_at AS "finishedAt",
           i.status::text AS status, i.version, i.payload
    FROM intent i LEFT JOIN step s ON true`;
  return row;
}

/** Records a step's end (completed with its result, or failed with the error) and audits it. False: the claim is lost. */
export async function finishStep(
  client: Tx,
  args: { intentId: string; runId: string; stepId: bigint; bridge: string; status: 'completed' | 'failed'; result: JsonValue | null; error: string | null; actor: string; claimToken: string | null },
): Promise<Date | null> {
  const { intentId: id, claimToken: token } = args;
  const result = args.result === null ? null : JSON.stringify(args.result);
  const rows = await client.$queryRaw<{ finishedAt: Date }[]>`
    WITH ${claimHeld(id, token)},
    step AS (
      UPDATE pipeline_steps SET status = ${args.status}, finished_at = now(), result = ${result}::jsonb, error = ${args.error}
      WHERE id = ${args.stepId} AND status = 'running' AND (SELECT held FROM claim)
      RETURNING position, finished_at
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT ${id}::uuid, ${args.status === 'completed' ? 'bridge_completed' : 'bridge_failed'}, ${args.actor},
             jsonb_strip_nulls(jsonb_build_object('runId', ${args.runId}::text, 'bridge', ${args.bridge}::text, 'position', s.position,
                                                  'result', ${result}::jsonb, 'error', ${args.error}::text))
      FROM step s
    )
    SELECT finished_at AS "finishedAt" FROM step`;
  return rows[0]?.finishedAt ?? null;
}

/** Closes a run with its status (audited) and returns the intent as the run leaves it. Null: the claim is lost. */
export async function finishRun(
  client: Tx,
  args: { intentId: string; runId: string; status: Exclude<RunStatus, 'running' | 'abandoned'>; error: string | null; actor: string; claimToken: string | null },
): Promise<{ finishedAt: Date; intent: Intent } | null> {
  const { intentId: id, claimToken: token } = args;
  const rows = await client.$queryRaw<(Omit<Intent, 'createdAt' | 'updatedAt'> & { createdAt: Date; updatedAt: Date; finishedAt: Date })[]>`
    WITH ${claimHeld(id, token)},
    run AS (
      UPDATE pipeline_runs SET status = ${args.status}, finished_at = now(), error = ${args.error}
      WHERE id = ${args.runId}::uuid AND status = 'running' AND (SELECT held FROM claim)
      RETURNING finished_at
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT ${id}::uuid, 'pipeline_finished', ${args.actor},
             jsonb_strip_nulls(jsonb_build_object('runId', ${args.runId}::text, 'status', ${args.status}::text, 'error', ${args.error}::text))
      FROM run
    )
    SELECT r.finished_at AS "finishedAt", i.id::text AS id, i.status::text AS status, i.payload, i.source, i.version, i.is_replay AS "isReplay",
           i.created_at AS "createdAt", i.updated_at AS "updatedAt"
    FROM run r, intents i WHERE i.id = ${id}::uuid`;
  const row = rows[0];
  if (!row) return null;
  const { finishedAt, createdAt, updatedAt, ...intent } = row;
  return { finishedAt, intent: { ...intent, createdAt: createdAt.toISOString(), updatedAt: updatedAt.toISOString() } };
}

type RunRow = Omit<PipelineRun, 'startedAt' | 'finishedAt' | 'steps' | 'error'> & {
  startedAt: Date;
  finishedAt: Date | null;
  error: string | null;
  steps: { bridge: string; status: StepStatus; startedAt: string | null; finishedAt: string | null; result: JsonValue | null; error: string | null }[];
};

/** An intent's latest runs, newest first, each with its steps in order. */
export async function selectRuns(client: Tx, intentId: string, limit: number): Promise<PipelineRun[]> {
  const rows = await client.$queryRaw<RunRow[]>`
    SELECT r.id::text AS id, r.intent_id::text AS "intentId", r.round, r.mode, r.status, r.door, r.actor,
           r.started_at AS "startedAt", r.finished_at AS "finishedAt", r.error,
           COALESCE((SELECT jsonb_agg(jsonb_build_object(
                       'bridge', s.bridge, 'status', s.status,
                       'startedAt', to_char(s.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                       'finishedAt', to_char(s.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                       'result', s.result, 'error', s.error) ORDER BY s.position, s.id)
                     FROM pipeline_steps s WHERE s.run_id = r.id), '[]'::jsonb) AS steps
    FROM pipeline_runs r
    WHERE r.intent_id = ${intentId}::uuid
    ORDER BY r.started_at DESC, r.id
    LIMIT ${limit}`;
  return rows.map(toRun);
}

export function toRun(row: RunRow): PipelineRun {
  return {
    id: row.id,
    intentId: row.intentId,
    round: row.round,
    mode: row.mode,
    status: row.status,
    door: row.door,
    actor: row.actor,
    startedAt: row.startedAt.toISOString(),
    finishedAt: row.finishedAt?.toISOString() ?? null,
    ...(row.error ? { error: row.error } : {}),
    steps: row.steps.map((s) => ({
      bridge: s.bridge,
      status: s.status,
      startedAt: s.startedAt,
      finishedAt: s.finishedAt,
      ...(s.result !== null && s.result !== undefined ? { result: s.result } : {}),
      ...(s.error ? { error: s.error } : {}),
    })),
  };
}
