import { Prisma } from '@/generated/prisma/client';
import type { Tx } from '@/lib/db/client';
import type { JsonObject, JsonValue } from '@/lib/shared/json';
import { fenceCondition } from '@/lib/leases/fencing';
import type { Fencing } from '@/lib/leases/schemas';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { Intent } from '@/lib/shared/intent-types';
import { WORKER_RUNS, type PipelineDoor, type PipelineMode, type PipelineRunRecord, type RunStatus, type StepStatus } from './types';

/**
 * The pipeline's statements: one per operation, named for what it does, each written for many runs at once (arrays
 * unnested, one row per item, answered in the items' order) and returning what happened to each. A worker's items
 * carry their claim token, and each item's writes are then conditional on the claim still being that token's: the
 * claim rows are read FOR SHARE in the same statement (in intent order, as every statement that locks several claim
 * rows does, so two of them never wait on each other in a cycle), so a rescue that commits first makes that item's
 * writes do nothing while the other items of the batch are written, and a rescue that comes second waits for the
 * statement to commit. Runs from the API or the console carry no token and come one at a time.
 */

/** Runs one statement and returns its rows: Prisma's client (`onClient`) or the pool directly (`queryOnPool`). */
export type Exec = <T>(query: Prisma.Sql) => Promise<T[]>;
export const onClient =
  (client: Tx): Exec =>
  <T>(query: Prisma.Sql) =>
    client.$queryRaw<T[]>(query);
/** A client or a statement runner: the statements' callers pass either. */
export type Runner = Tx | Exec;
export const execOf = (runner: Runner): Exec => (typeof runner === 'function' ? runner : onClient(runner));

/**
 * `held`: the claims of the items that carry a token and still hold it (their intent_work rows, locked in intent
 * order: FOR SHARE by the records' statements, FOR UPDATE by one that also ends the claims). `holds(i)` is true for
 * an item without a token, and for one whose claim is in `held`.
 */
export const heldClaims = (lock: 'SHARE' | 'UPDATE' = 'SHARE') =>
  Prisma.sql`
    held AS MATERIALIZED (
      SELECT w.intent_id, w.claim_token FROM intent_work w JOIN input i ON i.intent_id = w.intent_id AND i.claim_token = w.claim_token
      WHERE w.state = 'running'
      ORDER BY w.intent_id
      FOR ${Prisma.raw(lock)} OF w
    )`;
const HELD = heldClaims();
export const holds = (alias: string) =>
  Prisma.raw(`(${alias}.claim_token IS NULL OR EXISTS (SELECT 1 FROM held h WHERE h.intent_id = ${alias}.intent_id AND h.claim_token = ${alias}.claim_token))`);

/**
 * Opening runs, written once for an operator's start (startRuns), a worker's run recorded at its first write
 * (recordOpenedRuns) and one recorded whole at its close (lib/workers/repository.ts): from a CTE `opening`
 * (intent_id, claim_token, round, mode, door, actor, details, intent_status, and for a run the claim named already
 * run_id and started_at; for a run recorded whole run_status, finished_at and run_error), the intent's runs still
 * marked running are abandoned (whoever opens a run holds the intent alone, so they died with their process), a run is
 * inserted for each intent not COMPLETED or FAILED (and passing `condition`), and audited. Makes the CTEs `abandoned`,
 * `abandoned_steps` and `run`; `runStartedAudit` selects their audit events.
 */
export const openRunsCtes = (condition: Prisma.Sql = Prisma.empty) => Prisma.sql`
    abandoned AS (
      UPDATE pipeline_runs r SET status = 'abandoned', finished_at = now()
      FROM opening o WHERE r.intent_id = o.intent_id AND r.status = 'running'
      RETURNING r.id
    ), abandoned_steps AS (
      UPDATE pipeline_steps SET status = 'abandoned', finished_at = now()
      WHERE run_id IN (SELECT id FROM abandoned) AND status = 'running'
    ), run AS (
      INSERT INTO pipeline_runs (id, intent_id, round, mode, door, actor, claim_token, started_at, status, finished_at, error)
      SELECT COALESCE(o.run_id, gen_random_uuid()), o.intent_id, o.round, o.mode, o.door, o.actor, o.claim_token,
             COALESCE(o.started_at, now()), COALESCE(o.run_status, 'running'), o.finished_at, o.run_error
      FROM opening o
      WHERE o.intent_status NOT IN ('COMPLETED', 'FAILED') ${condition}
      RETURNING id, intent_id, claim_token, round, mode, door, actor, started_at, finished_at
    )`;
/** The columns of `opening` that only a worker's run recorded after its claim sets (openRunsCtes), null for the others. */
export const OPENED_NOW = Prisma.sql`NULL::uuid AS run_id, NULL::timestamptz AS started_at, NULL::text AS run_status, NULL::timestamptz AS finished_at, NULL::text AS run_error`;
export const runStartedAudit = Prisma.sql`
      SELECT r.intent_id, 'pipeline_started' AS action, r.actor,
             jsonb_build_object('runId', r.id, 'mode', r.mode, 'door', r.door, 'round', r.round, 'claimToken', r.claim_token::text)
               || COALESCE(o.details, '{}'::jsonb) AS details, r.started_at AS at
      FROM run r JOIN opening o ON o.intent_id = r.intent_id AND o.claim_token IS NOT DISTINCT FROM r.claim_token`;

/**
 * One INSERT of audit events from several selects of (intent_id, action, actor, details, at), in the order given per
 * intent: readers follow the order of writing (the timeline), or the time and then the id (the audit page), so a
 * run's start comes before its first step's, a step's end before its run's. Each event carries the time of what it
 * records: a run recorded at its close has its start at the time it started.
 */
export const insertAudit = (...selects: Prisma.Sql[]) =>
  Prisma.sql`INSERT INTO audit_events (intent_id, action, actor, details, at)
      SELECT a.intent_id, a.action, a.actor, a.details, a.at FROM (${Prisma.join(
        selects.map((q, k) => Prisma.sql`SELECT ${k}::int AS k, e.* FROM (${q}) e`),
        ' UNION ALL ',
      )}) a ORDER BY a.intent_id, a.k`;

/** The results a run's round has recorded, by bridge (`r`: the run): replayed instead of run again. */
export const recordedOf = (r: string) =>
  Prisma.raw(`COALESCE((SELECT jsonb_object_agg(s.bridge, COALESCE(s.result, 'null'::jsonb))
                     FROM pipeline_steps s
                     WHERE s.intent_id = ${r}.intent_id AND s.round = ${r}.round AND s.status = 'completed'), '{}'::jsonb)`);

/**
 * How a step starts: `replayed` when its round recorded the bridge's result already; `running` when the intent's
 * status is one the bridge runs on, or when the bridge asked for an answer in this round (a wait not cancelled) and
 * has not finished its step; `skipped` otherwise. A bridge that waits owns its step until the step ends: the intent
 * may be moved meanwhile (a correction, PROCESSED → CORRECTED), and skipping the step then would drop its decision.
 * Moving the intent out of the round (RECEIVED, COMPLETED, FAILED) cancels the wait, and the status decides again.
 * `intentId`, `round` and `bridge` name the step.
 */
export const stepKind = (replayed: Prisma.Sql, status: Prisma.Sql, accepts: Prisma.Sql, step: { intentId: Prisma.Sql; round: Prisma.Sql; bridge: Prisma.Sql }) =>
  Prisma.sql`CASE WHEN ${replayed} THEN 'replayed'
                  WHEN ${status} = ANY(${accepts}) THEN 'running'
                  WHEN EXISTS (SELECT 1 FROM pipeline_waits pw
                               WHERE pw.intent_id = ${step.intentId} AND pw.round = ${step.round} AND pw.bridge = ${step.bridge} AND pw.state <> 'cancelled') THEN 'running'
                  ELSE 'skipped' END`;

/**
 * Starting steps, written once for startSteps, a worker's first step recorded after its claim (recordOpenedRuns) and
 * one recorded whole at its run's close: from a CTE `stepping` (run_id, intent_id, claim_token, round, position,
 * bridge, kind, recorded, actor, intent_status, version, and for a step recorded after it started started_at; for one
 * recorded whole ended, its end's status, and step_error), inserts each step: finished at once unless it runs. `kind`
 * is how the step started (stepKind), which its start's audit event says. Makes the CTE `step`; `stepStartedAudit`
 * selects the audit events.
 */
export const startStepsCtes = Prisma.sql`
    step AS (
      INSERT INTO pipeline_steps (run_id, intent_id, round, position, bridge, status, claim_token, started_at, finished_at, result, error)
      SELECT c.run_id, c.intent_id, c.round, c.position, c.bridge, COALESCE(c.ended, c.kind), c.claim_token, COALESCE(c.started_at, now()),
             CASE WHEN COALESCE(c.ended, c.kind) = 'running' THEN NULL ELSE now() END, c.recorded, c.step_error
      FROM stepping c
      RETURNING id, run_id, position, status, started_at, finished_at
    )`;
/** The columns of `stepping` that only a step recorded after it started sets (startStepsCtes), null for the others. */
export const STARTED_NOW = Prisma.sql`NULL::timestamptz AS started_at, NULL::text AS ended, NULL::text AS step_error`;
export const stepStartedAudit = Prisma.sql`
      SELECT c.intent_id, CASE c.kind WHEN 'running' THEN 'bridge_started' ELSE 'bridge_' || c.kind END AS action, c.actor,
             jsonb_build_object('runId', c.run_id::text, 'bridge', c.bridge, 'position', c.position, 'status', c.intent_status, 'version', c.version) AS details,
             s.started_at AS at
      FROM step s JOIN stepping c ON c.run_id = s.run_id AND c.position = s.position`;

/**
 * Ending steps, written once for finishSteps and the statement that also closes runs and ends claims: from the CTE
 * `input` (intent_id, claim_token, run_id, step_id, bridge, step_status, result, step_error, actor), each running
 * step whose claim is held is completed or failed. Makes the CTE `step`; `stepEndedAudit` selects the audit events.
 */
export const finishStepsCtes = Prisma.sql`
    step AS (
      UPDATE pipeline_steps s SET status = i.step_status, finished_at = now(), result = i.result, error = i.step_error
      FROM input i
      WHERE s.id = i.step_id AND s.status = 'running' AND ${holds('i')}
      RETURNING s.id, s.run_id, s.position, s.finished_at
    )`;
/** The audit events of the steps' ends in `step`: one step per run of `input` (its running step, or one recorded whole). */
export const stepEndedAudit = Prisma.sql`
      SELECT i.intent_id, 'bridge_' || i.step_status AS action, i.actor,
             jsonb_strip_nulls(jsonb_build_object('runId', i.run_id::text, 'bridge', i.bridge, 'position', s.position, 'result', i.result, 'error', i.step_error)) AS details,
             s.finished_at AS at
      FROM step s JOIN input i ON i.run_id = s.run_id`;

/**
 * Closing runs, written once for finishRuns and the statement that also ends claims: from the CTE `input`
 * (intent_id, claim_token, run_id, run_status, run_error, actor), each running run whose claim is held gets its
 * status. Makes the CTE `run`; `runEndedAudit` selects the audit events.
 */
export const finishRunsCtes = Prisma.sql`
    run AS (
      UPDATE pipeline_runs r SET status = i.run_status, finished_at = now(), error = i.run_error
      FROM input i
      WHERE r.id = i.run_id AND r.status = 'running' AND ${holds('i')}
      RETURNING r.id, r.finished_at
    )`;
export const runEndedAudit = Prisma.sql`
      SELECT i.intent_id, 'pipeline_finished' AS action, i.actor,
             jsonb_strip_nulls(jsonb_build_object('runId', i.run_id::text, 'status', i.run_status, 'error', i.run_error)) AS details,
             r.finished_at AS at
      FROM run r JOIN input i ON i.run_id = r.id`;

/** The intent as a run leaves it, for the answer of a statement that closes runs (`it`: the intents row). */
export const intentColumns = Prisma.sql`it.id::text AS id, it.status::text AS status, it.payload, it.source, it.version, it.is_replay AS "isReplay",
           it.created_at AS "createdAt", it.updated_at AS "updatedAt"`;

export type IntentRow = Omit<Intent, 'createdAt' | 'updatedAt'> & { createdAt: Date | null; updatedAt: Date | null };
export const toIntent = ({ createdAt, updatedAt, ...intent }: IntentRow): Intent | null =>
  createdAt && updatedAt ? { ...intent, createdAt: createdAt.toISOString(), updatedAt: updatedAt.toISOString() } : null;

const col = <T, V>(items: readonly T[], pick: (item: T) => V): V[] => items.map(pick);
/** A JSON value as a statement's parameter (null stays SQL NULL). */
export const json = (value: JsonValue | null | undefined) => (value === null || value === undefined ? null : JSON.stringify(value));

export type RunStart = {
  intentId: string;
  mode: PipelineMode;
  door: PipelineDoor;
  actor: string;
  claimToken: string | null;
  /** Added to the run's `pipeline_started` audit event (a rerun's bridge, reason and reused steps). */
  details?: JsonObject;
};

export type StartedRun = {
  intentStatus: IntentStatus | null;
  claimHeld: boolean;
  /** An operator's run found a worker's claim on the intent: the worker that holds it (the run did not start). */
  claimedBy: string | null;
  runId: string | null;
  round: number | null;
  startedAt: Date | null;
  /** Results this round has recorded, by bridge: replayed instead of run again. */
  recorded: Record<string, JsonValue>;
};

/**
 * Opens runs of non-terminal intents (audited), each in its intent's current round, and returns what each round has
 * already recorded. Runs of the intent still marked running are marked abandoned: whoever opens a run here holds the
 * intent alone (a worker by its claim, an operator by the execution lock), so they died with their process.
 *
 * An operator's run (no token) is refused while a worker's claim is running on the intent: the claim is the
 * worker's execution lock (lib/pipeline/lock.ts says why the two exclude each other). A fenced run (one item) has its
 * token checked by the same statement: only the resource's newest grant passes; any other aborts it with SQLSTATE
 * BF409 (lib/leases/fencing.ts), so nothing is recorded.
 */
export async function startRuns(exec: Exec, items: readonly RunStart[], fencing: Fencing | null = null): Promise<StartedRun[]> {
  if (fencing && items.length !== 1) throw new Error('a fenced run is opened alone');
  return exec<StartedRun>(Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${col(items, (i) => i.intentId)}::uuid[], ${col(items, (i) => i.claimToken)}::bigint[], ${col(items, (i) => i.mode)}::text[],
                           ${col(items, (i) => i.door)}::text[], ${col(items, (i) => i.actor)}::text[], ${col(items, (i) => json(i.details))}::jsonb[])
        WITH ORDINALITY AS t(intent_id, claim_token, mode, door, actor, details, ord)
    ), ${HELD},
    checked AS (
      SELECT i.*, it.status::text AS intent_status, COALESCE(w.round, 1) AS round, ${holds('i')} AS claim_held,
             CASE WHEN i.claim_token IS NULL AND w.state = 'running' THEN coalesce(w.claimed_by, 'a worker') END AS claimed_by, ${OPENED_NOW}
      FROM input i LEFT JOIN intents it ON it.id = i.intent_id LEFT JOIN intent_work w ON w.intent_id = i.intent_id
    ), opening AS (
      SELECT * FROM checked c WHERE c.claim_held AND c.claimed_by IS NULL
    ), ${openRunsCtes(fenceCondition(fencing))},
    audit AS (${insertAudit(runStartedAudit)})
    SELECT c.intent_status AS "intentStatus", c.claim_held AS "claimHeld", c.claimed_by AS "claimedBy",
           r.id::text AS "runId", r.round, r.started_at AS "startedAt", ${recordedOf('r')} AS recorded
    FROM checked c LEFT JOIN run r ON r.intent_id = c.intent_id AND r.claim_token IS NOT DISTINCT FROM c.claim_token
    ORDER BY c.ord`);
}

/**
 * A worker's run as its claim opened it, not recorded yet (lib/workers/repository.ts, claimDueIntents): the run the
 * claim named (`runId`, started at the claim) and its first step, started as `kind` says (stepKind, decided by the
 * claim). It is recorded by the run's first write: recordOpenedRuns before anything else the run writes, or its
 * close, which records it whole (closeRunsAndClaims' sibling for such runs).
 */
export type PendingRun = {
  intentId: string;
  claimToken: string;
  runId: string;
  round: number;
  startedAt: Date;
  mode: PipelineMode;
  door: PipelineDoor;
  actor: string;
  bridge: string;
  kind: Extract<StepStatus, 'running' | 'skipped' | 'replayed'>;
  /** The result this round recorded for the bridge, for a step started as `replayed`. */
  recorded: JsonValue | undefined;
  /** The intent as the step started on it: its start's audit event says so. */
  intentStatus: IntentStatus;
  version: number;
};

/** The columns of pending runs in a statement's `input` (recordOpenedRuns, and the close that records a run whole). */
export const pendingColumns = (items: readonly PendingRun[]) =>
  Prisma.sql`${col(items, (i) => i.intentId)}::uuid[], ${col(items, (i) => i.claimToken)}::bigint[], ${col(items, (i) => i.runId)}::uuid[],
             ${col(items, (i) => i.round)}::int[], ${col(items, (i) => i.startedAt)}::timestamptz[], ${col(items, (i) => i.mode)}::text[],
             ${col(items, (i) => i.door)}::text[], ${col(items, (i) => i.actor)}::text[], ${col(items, (i) => i.bridge)}::text[],
             ${col(items, (i) => i.kind)}::text[], ${col(items, (i) => json(i.recorded))}::jsonb[], ${col(items, (i) => i.intentStatus)}::text[],
             ${col(items, (i) => i.version)}::int[]`;
export const PENDING_NAMES = Prisma.raw('intent_id, claim_token, run_id, round, started_at, mode, door, actor, bridge, kind, recorded, intent_status, version');

/**
 * The pending runs of `input` opened, with their first steps: `opening` and `stepping` for openRunsCtes and
 * startStepsCtes, for the items whose claim is held. With `ended`, each run is recorded whole, finished, from the
 * columns of `input` (run_status, run_error, step_status, result, step_error); without it, the run and its first step
 * as they started (a running step, or one skipped or replayed at once).
 */
export const pendingOpening = (ended = false) => {
  const run = ended ? Prisma.sql`i.run_status, now(), i.run_error` : Prisma.sql`NULL::text, NULL::timestamptz, NULL::text`;
  const step = ended ? Prisma.sql`i.result, i.step_status, i.step_error` : Prisma.sql`i.recorded, NULL::text, NULL::text`;
  return Prisma.sql`
    opening (intent_id, claim_token, round, mode, door, actor, details, intent_status, run_id, started_at, run_status, finished_at, run_error) AS MATERIALIZED (
      SELECT i.intent_id, i.claim_token, i.round, i.mode, i.door, i.actor, NULL::jsonb, i.intent_status, i.run_id, i.started_at, ${run}
      FROM input i WHERE ${holds('i')}
    ), ${openRunsCtes()},
    stepping (run_id, intent_id, claim_token, round, position, bridge, kind, actor, intent_status, version, started_at, recorded, ended, step_error) AS MATERIALIZED (
      SELECT r.id, r.intent_id, r.claim_token, r.round, 0, i.bridge, i.kind, r.actor, i.intent_status, i.version, i.started_at, ${step}
      FROM run r JOIN input i ON i.run_id = r.id
    ), ${startStepsCtes}`;
};

/**
 * Records workers' runs that their claims opened (PendingRun): each run and its first step, audited at the time they
 * started, for the items whose claim is still held. Answers each first step's id; null: the claim is lost.
 */
export async function recordOpenedRuns(exec: Exec, items: readonly PendingRun[]): Promise<(string | null)[]> {
  const rows = await exec<{ stepId: string | null }>(Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${pendingColumns(items)}) WITH ORDINALITY AS t(${PENDING_NAMES}, ord)
    ), ${HELD},
    ${pendingOpening()},
    audit AS (${insertAudit(runStartedAudit, stepStartedAudit)})
    SELECT s.id::text AS "stepId" FROM input i LEFT JOIN step s ON s.run_id = i.run_id ORDER BY i.ord`);
  return rows.map((r) => r.stepId);
}

export type StepStart = {
  intentId: string;
  claimToken: string | null;
  runId: string;
  round: number;
  position: number;
  bridge: string;
  accepts: readonly IntentStatus[];
  /** The result this round recorded for the bridge: the step is replayed from it. */
  replayed: JsonValue | undefined;
  actor: string;
};

export type StartedStep = {
  stepId: string | null;
  stepStatus: StepStatus | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  status: IntentStatus;
  version: number;
  payload: JsonObject;
};

/**
 * Records steps' starts with their audit events and returns each intent as its step sees it (stepKind says how each
 * starts). No step row (stepId null) means the claim is lost.
 */
export async function startSteps(exec: Exec, items: readonly StepStart[]): Promise<StartedStep[]> {
  return exec<StartedStep>(Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${col(items, (i) => i.intentId)}::uuid[], ${col(items, (i) => i.claimToken)}::bigint[], ${col(items, (i) => i.runId)}::uuid[],
                           ${col(items, (i) => i.round)}::int[], ${col(items, (i) => i.position)}::int[], ${col(items, (i) => i.bridge)}::text[],
                           ${col(items, (i) => i.accepts.join(','))}::text[], ${col(items, (i) => json(i.replayed))}::jsonb[],
                           ${col(items, (i) => i.replayed !== undefined)}::boolean[], ${col(items, (i) => i.actor)}::text[])
        WITH ORDINALITY AS t(intent_id, claim_token, run_id, round, position, bridge, accepts, recorded, replayed, actor, ord)
    ), ${HELD},
    checked AS (
      SELECT i.*, it.status::text AS intent_status, it.version, it.payload, ${holds('i')} AS claim_held, ${STARTED_NOW},
             ${stepKind(Prisma.sql`i.replayed`, Prisma.sql`it.status::text`, Prisma.sql`string_to_array(i.accepts, ',')`, { intentId: Prisma.sql`i.intent_id`, round: Prisma.sql`i.round`, bridge: Prisma.sql`i.bridge` })} AS kind
      FROM input i JOIN intents it ON it.id = i.intent_id
    ), stepping AS (
      SELECT * FROM checked c WHERE c.claim_held
    ), ${startStepsCtes},
    audit AS (${insertAudit(stepStartedAudit)})
    SELECT s.id::text AS "stepId", s.status AS "stepStatus", s.started_at AS "startedAt", s.finished_at AS "finishedAt",
           c.intent_status AS status, c.version, c.payload
    FROM checked c LEFT JOIN step s ON s.run_id = c.run_id AND s.position = c.position
    ORDER BY c.ord`);
}

export type StepEnd = {
  intentId: string;
  claimToken: string | null;
  runId: string;
  /** Null for the first step of a worker's run not recorded yet, which its run's close records whole. */
  stepId: string | null;
  bridge: string;
  /** `waiting`: the bridge stopped to wait for an answer (waits.ts); a later run takes the step again. */
  status: 'completed' | 'failed' | 'waiting';
  result: JsonValue | null;
  error: string | null;
  actor: string;
};

/** The columns of a step's end in a statement's `input` (finishStepsCtes); an item without a step end gives nulls. */
export const stepEndColumns = (ends: readonly (StepEnd | null)[]) =>
  Prisma.sql`${col(ends, (i) => i?.stepId ?? null)}::bigint[], ${col(ends, (i) => i?.bridge ?? null)}::text[], ${col(ends, (i) => i?.status ?? null)}::text[],
             ${col(ends, (i) => json(i?.result))}::jsonb[], ${col(ends, (i) => i?.error ?? null)}::text[]`;

/** Records steps' ends (completed with a result, or failed with the error), audited. Null: the claim is lost. */
export async function finishSteps(exec: Exec, items: readonly StepEnd[]): Promise<(Date | null)[]> {
  const rows = await exec<{ finishedAt: Date | null }>(Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${col(items, (i) => i.intentId)}::uuid[], ${col(items, (i) => i.claimToken)}::bigint[], ${col(items, (i) => i.runId)}::uuid[],
                           ${stepEndColumns(items)}, ${col(items, (i) => i.actor)}::text[])
        WITH ORDINALITY AS t(intent_id, claim_token, run_id, step_id, bridge, step_status, result, step_error, actor, ord)
    ), ${HELD},
    ${finishStepsCtes},
    audit AS (${insertAudit(stepEndedAudit)})
    SELECT s.finished_at AS "finishedAt" FROM input i LEFT JOIN step s ON s.id = i.step_id ORDER BY i.ord`);
  return rows.map((r) => r.finishedAt);
}

export type RunEnd = { intentId: string; claimToken: string | null; runId: string; status: Exclude<RunStatus, 'running' | 'abandoned'>; error: string | null; actor: string };
export type ClosedRun = { finishedAt: Date; intent: Intent };

/** Closes runs with their status (audited) and returns each intent as its run leaves it. Null: the claim is lost. */
export async function finishRuns(exec: Exec, items: readonly RunEnd[]): Promise<(ClosedRun | null)[]> {
  const rows = await exec<IntentRow & { finishedAt: Date | null }>(Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${col(items, (i) => i.intentId)}::uuid[], ${col(items, (i) => i.claimToken)}::bigint[], ${col(items, (i) => i.runId)}::uuid[],
                           ${col(items, (i) => i.status)}::text[], ${col(items, (i) => i.error)}::text[], ${col(items, (i) => i.actor)}::text[])
        WITH ORDINALITY AS t(intent_id, claim_token, run_id, run_status, run_error, actor, ord)
    ), ${HELD},
    ${finishRunsCtes},
    audit AS (${insertAudit(runEndedAudit)})
    SELECT r.finished_at AS "finishedAt", ${intentColumns}
    FROM input i LEFT JOIN run r ON r.id = i.run_id LEFT JOIN intents it ON it.id = i.intent_id AND r.id IS NOT NULL
    ORDER BY i.ord`);
  return rows.map(({ finishedAt, ...row }) => {
    const intent = toIntent(row);
    return finishedAt && intent ? { finishedAt, intent } : null;
  });
}

type RunRow = Omit<PipelineRunRecord, 'startedAt' | 'finishedAt' | 'steps' | 'error'> & {
  startedAt: Date;
  finishedAt: Date | null;
  error: string | null;
  steps: { bridge: string; status: StepStatus; startedAt: string | null; finishedAt: string | null; result: JsonValue | null; error: string | null }[];
};

/**
 * An intent's latest runs, newest first, each with its steps in order and its attempt, numbered within its round
 * (over all its runs, before the limit) as a job console numbers a job's attempts. A run that resumes after a wait
 * goes on with the attempt of the run that stopped to wait: the work queue does not count a wait as an attempt
 * either (waits.ts), so the runs panel and the queue say the same.
 */
export async function selectRuns(client: Tx, intentId: string, limit: number): Promise<PipelineRunRecord[]> {
  const rows = await client.$queryRaw<RunRow[]>`
    SELECT r.id::text AS id, r.intent_id::text AS "intentId", r.round, r.attempt, r.mode, r.status, r.door, r.actor,
           r.started_at AS "startedAt", r.finished_at AS "finishedAt", r.error,
           COALESCE((SELECT jsonb_agg(jsonb_build_object(
                       'bridge', s.bridge, 'status', s.status,
                       'startedAt', to_char(s.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                       'finishedAt', to_char(s.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                       'result', s.result, 'error', s.error) ORDER BY s.position, s.id)
                     FROM pipeline_steps s WHERE s.run_id = r.id), '[]'::jsonb) AS steps
    FROM (
      SELECT pr.*, 1 + (count(*) FILTER (WHERE pr.status <> 'waiting') OVER (
                         PARTITION BY pr.round ORDER BY pr.started_at, pr.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))::int AS attempt
      FROM (
        -- A run given back before it started (released) ran nothing: it is neither an attempt nor shown.
        SELECT id, intent_id, round, mode, status, door, actor, started_at, finished_at, error
        FROM pipeline_runs WHERE intent_id = ${intentId}::uuid AND status <> 'released'
        UNION ALL
        -- A worker's run its claim opened and nothing has recorded yet (claimDueIntents): the claim says it runs.
        SELECT w.run_id, w.intent_id, w.round, ${WORKER_RUNS.mode}::text, 'running', ${WORKER_RUNS.door}::text, ${WORKER_RUNS.actorPrefix}::text || w.claimed_by,
               w.claimed_at, NULL::timestamptz, NULL::text
        FROM intent_work w
        WHERE w.intent_id = ${intentId}::uuid AND w.state = 'running' AND w.run_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM pipeline_runs x WHERE x.id = w.run_id)
      ) pr
    ) r
    ORDER BY r.started_at DESC, r.id
    LIMIT ${limit}`;
  return rows.map(toRun);
}

export function toRun(row: RunRow): PipelineRunRecord {
  return {
    id: row.id,
    intentId: row.intentId,
    round: row.round,
    attempt: row.attempt,
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
