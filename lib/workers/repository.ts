import { Prisma } from '@/generated/prisma/client';
import {
  execOf,
  type Exec,
  type Runner,
  finishRunsCtes,
  finishStepsCtes,
  heldClaims,
  insertAudit,
  intentColumns,
  json,
  PENDING_NAMES,
  pendingColumns,
  pendingOpening,
  recordedOf,
  runEndedAudit,
  runStartedAudit,
  stepEndColumns,
  stepEndedAudit,
  stepKind,
  stepStartedAudit,
  toIntent,
  type ClosedRun,
  type IntentRow,
  type PendingRun,
  type StartedRun,
  type StartedStep,
} from '@/lib/pipeline/repository';
import type { RunClose } from '@/lib/pipeline/writer';
import { WORKER_RUNS, type PipelineDoor, type PipelineMode } from '@/lib/pipeline/types';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { JsonObject, JsonValue } from '@/lib/shared/json';
import { claimFenceResource, fenceGrant } from '@/lib/leases/fencing';
import { PIPELINE_LOCK_NAMESPACE } from '@/lib/pipeline/lock';
import { handedToWait } from '@/lib/pipeline/waits';

/**
 * The work queue's statements (intent_work), one per operation, each returning what it did. The shapes follow
 * River's river_job.sql and graphile-worker's getJobs/completeJobs: a CTE takes the rows with FOR UPDATE SKIP LOCKED,
 * a conditional UPDATE applies, RETURNING says what happened.
 *
 * Every write of a claim after the claim itself is conditional on its token and on the row still being `running`:
 * once the rescuer (or a release, or an operator's retry) has moved the row on, the old holder's writes change
 * nothing, and it learns so from the empty result. The rescuer itself re-checks `running` and the expired lease in
 * the statement that moves the row (River's #1302 was a rescue decided on an earlier read).
 */

export type Claim = {
  intentId: string;
  claimToken: string;
  attempt: number;
  maxAttempts: number;
  round: number;
  lastError: string | null;
  /** The previous attempt was the last one and was rescued: the intent is to be failed, not run again. */
  exhausted: boolean;
  /**
   * The run and its first step as the claim opened them (claimDueIntents' `open`), `pending` until the run's first
   * write records them (none when the claim recorded them); none for an exhausted claim.
   */
  opened?: { run: StartedRun; firstStep: StartedStep; pending?: PendingRun };
};

/** What a claim opens for each intent it claims: a run with these, and the step of its first bridge. */
/**
 * What a claim opens for each intent it claims: a run with these, and the step of its first bridge. `record`: the
 * claim records them itself, audited, as a run's first write would (recordOpenedRuns) — for a BridgeSet of several
 * bridges, whose runs write before their second bridge anyway, so recording them later would only cost a statement.
 */
export type OpenOnClaim = { mode: PipelineMode; door: PipelineDoor; actor: string; bridge: string; accepts: readonly IntentStatus[]; record?: boolean };

type ClaimRow = Omit<Claim, 'opened'> & {
  runId: string | null;
  runStartedAt: Date | null;
  recorded: Record<string, JsonValue> | null;
  stepKind: PendingRun['kind'] | null;
  stepRecorded: JsonValue | null;
  stepId: string | null;
  intentStatus: IntentStatus | null;
  version: number | null;
  payload: JsonObject | null;
};

function toClaim({ runId, runStartedAt, recorded, stepKind, stepRecorded, stepId, intentStatus, version, payload, ...claim }: ClaimRow, open: OpenOnClaim | undefined): Claim {
  if (runId === null || !open) return claim;
  const run: StartedRun = { intentStatus, claimHeld: true, claimedBy: null, runId, round: claim.round, startedAt: runStartedAt, recorded: recorded ?? {} };
  // A step that does not run ends as it starts; until its run is recorded it has no id (recordOpenedRuns).
  const firstStep: StartedStep = { stepId, stepStatus: stepKind, startedAt: runStartedAt, finishedAt: stepKind === 'running' ? null : runStartedAt, status: intentStatus!, version: version!, payload: payload! };
  if (open.record) return { ...claim, opened: { run, firstStep } };
  const pending: PendingRun = {
    intentId: claim.intentId,
    claimToken: claim.claimToken,
    runId,
    round: claim.round,
    startedAt: runStartedAt!,
    mode: open.mode,
    door: open.door,
    actor: open.actor,
    bridge: open.bridge,
    kind: stepKind!,
    recorded: stepKind === 'replayed' ? (stepRecorded ?? null) : undefined,
    intentStatus: intentStatus!,
    version: version!,
  };
  return { ...claim, opened: { run, firstStep, pending } };
}

const ms = (n: number) => n; // documents that the number is milliseconds where it is bound

/**
 * The claim's LIMIT, written into the statement's text rather than bound. Bound, PostgreSQL's generic plan of the
 * named statement cannot know how few rows are taken, costs the claim as if it took a tenth of the queue, and so
 * re-plans the statement with its values on every call; planning this statement costs a good share of running it.
 * Written in, each batch size (1 to the worker's concurrency) is its own statement, planned once per connection.
 */
function claimLimit(limit: number): Prisma.Sql {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`a claim takes a positive whole number of rows, not ${limit}`);
  return Prisma.raw(String(limit));
}

/**
 * Claims up to `limit` due rows (available or retryable, run_after passed) unless claiming is paused. Rows whose
 * intent is already COMPLETED or FAILED are never claimed: they are settled in the same statement.
 *
 * Two things ride on the claim so that the run needs no statement of its own for them. The intent's execution lock
 * is tried (pg_try_advisory_xact_lock, held until the claim commits): a row whose intent an operator's run holds is
 * left waiting, and an operator's run that starts later finds the claim (lib/pipeline/lock.ts). And each new token
 * is granted to the claim's fence (fenceGrant), as a lease's grant is: from this commit on, the engine refuses the
 * writes of every earlier claim of the intent.
 *
 * With `open`, the claim also opens each claimed intent's run: it names the run (intent_work.run_id) and decides
 * how its first bridge's step starts (stepKind, as startSteps would), so that a worker's run starts with no statement
 * of its own. It records neither: the run's first write does (PendingRun), and a run whose bridge changed nothing
 * until its end is recorded whole by its close, in one statement with the claim's end (recordRunsAndEndClaims).
 * Until then the console reads the running run from the claim (selectRuns). An exhausted claim opens nothing (it is
 * failed, not run); a claim given back before its run started leaves nothing to record; the rescue records the run of
 * a claim it takes back as abandoned.
 */
export async function claimDueIntents(
  client: Runner,
  args: { workerName: string; limit: number; leaseMs: number; maxAttempts: number; open?: OpenOnClaim },
): Promise<Claim[]> {
  const rows = await execOf(client)<ClaimRow>(Prisma.sql`
    WITH due AS (
      SELECT w.intent_id, w.attempt AS prior_attempt, w.max_attempts AS prior_max
      FROM intent_work w
      WHERE w.state IN ('available', 'retryable') AND w.run_after <= now()
        AND NOT EXISTS (SELECT 1 FROM worker_control c WHERE c.paused)
      ORDER BY w.run_after, w.intent_id
      LIMIT ${claimLimit(args.limit)}
      FOR UPDATE SKIP LOCKED
    ), due_status AS MATERIALIZED (
      -- One index lookup per due row, whatever the planner estimates: a join may hash the whole intents table.
      -- A claim that records its runs reads the intent's row FOR KEY SHARE SKIP LOCKED: a row someone holds FOR
      -- UPDATE (a person's psql session, a transaction left open) reads as NULL, so its intent is neither claimed nor
      -- settled and stays due for a later claim. Without it, the run the claim records (its foreign key takes the same
      -- KEY SHARE lock) waited for that holder, and with it every other intent of the claim and the worker's whole
      -- claim loop. A claim that records nothing takes no such lock and waits for nothing: the lock is a write to the
      -- intent's row, paid on every run.
      SELECT d.*, (SELECT i.status::text FROM intents i WHERE i.id = d.intent_id ${args.open?.record ? Prisma.sql`FOR KEY SHARE SKIP LOCKED` : Prisma.empty}) AS intent_status FROM due d
    ), claimed AS MATERIALIZED (
      UPDATE intent_work w SET
        state = 'running',
        attempt = CASE WHEN d.prior_attempt < d.prior_max THEN d.prior_attempt + 1 ELSE d.prior_attempt END,
        max_attempts = CASE WHEN d.prior_attempt = 0 THEN ${args.maxAttempts}::int ELSE d.prior_max END,
        claim_token = nextval('intent_work_claim_token_seq'),
        claimed_by = ${args.workerName},
        run_id = ${args.open ? Prisma.sql`CASE WHEN d.prior_attempt < d.prior_max THEN gen_random_uuid() END` : Prisma.sql`NULL`},
        claimed_at = now(),
        heartbeat_at = now(),
        lease_until = now() + ${ms(args.leaseMs)} * interval '1 millisecond'
      FROM due_status d
      WHERE w.intent_id = d.intent_id AND d.intent_status NOT IN ('COMPLETED', 'FAILED')
        -- Tried on the due rows only (d, the materialised CTE): written on w, the planner may test it while scanning
        -- the whole queue, and this claim would hold the execution locks of intents it never claimed until it commits,
        -- keeping them from every other worker and from operators' runs.
        AND pg_try_advisory_xact_lock(${PIPELINE_LOCK_NAMESPACE}::int, hashtext(d.intent_id::text))
      RETURNING w.intent_id, w.claim_token, w.attempt, w.max_attempts, w.round, w.last_error, w.run_id, w.claimed_at, (d.prior_attempt >= d.prior_max) AS exhausted
    ), granted AS MATERIALIZED (
      SELECT c.*, ${fenceGrant(claimFenceResource(Prisma.sql`c.intent_id`), Prisma.sql`c.claim_token`)} AS granted FROM claimed c
    ), settled AS (
      UPDATE intent_work w SET state = CASE WHEN d.intent_status = 'COMPLETED' THEN 'completed' ELSE 'failed' END, finished_at = now()
      FROM due_status d
      WHERE w.intent_id = d.intent_id AND d.intent_status IN ('COMPLETED', 'FAILED')
    ), ${args.open ? openOnClaim(args.open) : Prisma.sql`first_step AS (SELECT NULL::uuid AS run_id, NULL::text AS kind, NULL::jsonb AS recorded, NULL::jsonb AS all_recorded,
      NULL::text AS intent_status, NULL::int AS version, NULL::jsonb AS payload WHERE false)`}${args.open?.record ? Prisma.empty : Prisma.sql`,
    step AS (SELECT NULL::bigint AS id, NULL::uuid AS run_id WHERE false)`}
    SELECT g.intent_id::text AS "intentId", g.claim_token::text AS "claimToken", g.attempt, g.max_attempts AS "maxAttempts", g.round,
           g.last_error AS "lastError", g.exhausted,
           f.run_id::text AS "runId", g.claimed_at AS "runStartedAt", f.all_recorded AS recorded, f.kind AS "stepKind", f.recorded AS "stepRecorded",
           s.id::text AS "stepId", f.intent_status AS "intentStatus", f.version, f.payload
    FROM granted g LEFT JOIN first_step f ON f.run_id = g.run_id LEFT JOIN step s ON s.run_id = g.run_id
    ORDER BY g.intent_id`);
  return rows.map((row) => toClaim(row, args.open));
}

/**
 * How the first step of each run the claim opens starts (claimDueIntents' `open`), with the results its round has
 * recorded and the intent as the step sees it: CTEs after `granted`. With `record`, the runs and their first steps
 * are recorded too, as recordOpenedRuns records them (the same SQL), in the claim's transaction.
 */
function openOnClaim(open: OpenOnClaim): Prisma.Sql {
  const record = Prisma.sql`,
    input AS (
      SELECT f.intent_id, g.claim_token, f.run_id, f.round, g.claimed_at AS started_at, ${open.mode}::text AS mode, ${open.door}::text AS door,
             ${open.actor}::text AS actor, ${open.bridge}::text AS bridge, f.kind, f.recorded, f.intent_status, f.version
      FROM first_step f JOIN granted g ON g.run_id = f.run_id
    ), held AS (SELECT intent_id, claim_token FROM input),
    ${pendingOpening()},
    opened_audit AS (${insertAudit(runStartedAudit, stepStartedAudit)})`;
  return Prisma.sql`first_step AS MATERIALIZED (
      SELECT g.run_id, g.intent_id, g.round,
             ${stepKind(Prisma.sql`rec.recorded ? ${open.bridge}::text`, Prisma.sql`it.status::text`, Prisma.sql`${[...open.accepts]}::text[]`, { intentId: Prisma.sql`g.intent_id`, round: Prisma.sql`g.round`, bridge: Prisma.sql`${open.bridge}::text` })} AS kind,
             rec.recorded -> ${open.bridge}::text AS recorded, rec.recorded AS all_recorded,
             it.status::text AS intent_status, it.version, it.payload
      FROM granted g JOIN intents it ON it.id = g.intent_id CROSS JOIN LATERAL (SELECT ${recordedOf('g')} AS recorded) rec
      WHERE g.run_id IS NOT NULL
    )${open.record ? record : Prisma.empty}`;
}

/** Extends the leases of the claims still held; returns the tokens that were (the others are lost). */
export async function heartbeatClaims(client: Runner, args: { claimTokens: string[]; leaseMs: number }): Promise<string[]> {
  if (args.claimTokens.length === 0) return [];
  // The rows are locked in intent order first, as every statement that locks several claims does (repository.ts of
  // the pipeline): two such statements of one process never wait on each other in a cycle.
  const rows = await execOf(client)<{ claimToken: string }>(Prisma.sql`
    WITH mine AS (
      SELECT intent_id FROM intent_work WHERE claim_token = ANY(${args.claimTokens}::bigint[]) AND state = 'running' ORDER BY intent_id FOR UPDATE
    )
    UPDATE intent_work w SET heartbeat_at = now(), lease_until = now() + ${ms(args.leaseMs)} * interval '1 millisecond'
    FROM mine m
    WHERE w.intent_id = m.intent_id AND w.claim_token = ANY(${args.claimTokens}::bigint[]) AND w.state = 'running'
    RETURNING w.claim_token::text AS "claimToken"`);
  return rows.map((r) => r.claimToken);
}

type ClaimRef = { intentId: string; claimToken: string };

/** How a claim's row ends (`i`: outcome, delay_ms, error per item), written once for settleClaims and closeRunsAndClaims. */
const SETTLE = Prisma.sql`
        state = CASE i.outcome WHEN 'retry' THEN 'retryable' WHEN 'release' THEN 'available' ELSE i.outcome END,
        finished_at = CASE WHEN i.outcome IN ('completed', 'failed') THEN now() ELSE w.finished_at END,
        run_after = CASE WHEN i.outcome IN ('retry', 'release') THEN now() + i.delay_ms * interval '1 millisecond' ELSE w.run_after END,
        attempt = CASE WHEN i.outcome = 'release' THEN greatest(w.attempt - 1, 0) ELSE w.attempt END,
        last_error = CASE WHEN i.outcome IN ('retry', 'release') THEN i.error ELSE COALESCE(i.error, w.last_error) END,
        lease_until = NULL`;

/**
 * Records, finished as `status` with `error` (SQL over the alias `c`), the runs that claims named and nothing recorded
 * (`claims`: a CTE of ended claims with their run_id, intent_id, round, claim_token, claimed_at and claimed_by), as
 * the worker that held each claim would have (WORKER_RUNS), started at the claim. Written once for the settle and the
 * rescue.
 */
const recordClaimsRuns = (claims: 'settled' | 'rescued', status: 'interrupted' | 'abandoned', error: Prisma.Sql, where: Prisma.Sql = Prisma.empty) => Prisma.sql`
      INSERT INTO pipeline_runs (id, intent_id, round, mode, door, actor, claim_token, started_at, status, finished_at, error)
      SELECT c.run_id, c.intent_id, c.round, ${WORKER_RUNS.mode}::text, ${WORKER_RUNS.door}::text, ${WORKER_RUNS.actorPrefix}::text || c.claimed_by, c.claim_token, c.claimed_at,
             ${status}::text, now(), ${error}
      FROM ${Prisma.raw(claims)} c
      WHERE c.run_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pipeline_runs r WHERE r.id = c.run_id) ${where}`;

/**
 * A settled claim whose run is still open, so that no run stays `running` without a claim (`settled`: the claims just
 * ended). A claim given back before its run started (`available`: fetched ahead by a stopping worker) whose claim
 * recorded the run has its run and first step `released`, audited as `pipeline_released`: no bridge ran, so the run
 * is no attempt, the runs panel leaves it out, and no `evt.intent.pipeline_finished` goes out for it (one whose run
 * was not recorded records nothing). Any other recorded run (one that stopped on an error the pipeline could not
 * record) is closed as `interrupted` with its running step abandoned, audited as a run's end; a claim that ended
 * retryable or failed before its run was recorded has that run recorded as `interrupted`, so that every attempt shows
 * among the runs.
 */
const CLOSE_LEFT_OPEN = Prisma.sql`left_open AS (
      UPDATE pipeline_runs r SET status = CASE WHEN s.state = 'available' THEN 'released' ELSE 'interrupted' END, finished_at = now(),
             error = CASE WHEN s.state = 'available' THEN 'its claim was given back before the run started (a stopping worker)' ELSE 'its claim ended before the run did' END
      FROM settled s
      WHERE r.claim_token = s.claim_token AND r.status = 'running'
      RETURNING r.id, r.intent_id, r.actor, r.status, r.error
    ), left_unrecorded AS (
      ${recordClaimsRuns(
        'settled',
        'interrupted',
        Prisma.sql`'its claim ended before the run was recorded: ' || coalesce(c.last_error, 'no error recorded')`,
        Prisma.sql`AND c.state IN ('retryable', 'failed')`,
      )}
      RETURNING id, intent_id, actor, status, error
    ), left_open_steps AS (
      UPDATE pipeline_steps s SET status = CASE WHEN l.status = 'released' THEN 'released' ELSE 'abandoned' END, finished_at = now()
      FROM left_open l
      WHERE s.run_id = l.id AND s.status = 'running'
    ), left_open_audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT intent_id, CASE WHEN status = 'released' THEN 'pipeline_released' ELSE 'pipeline_finished' END, actor,
             jsonb_build_object('runId', id::text, 'status', status, 'error', error)
      FROM (SELECT * FROM left_open UNION ALL SELECT * FROM left_unrecorded) l
    )`;

/**
 * How a claim ends: `completed` or `failed` for good (with the reason, if any); `retry`, a failed attempt with
 * attempts left, due again after `delayMs` (the caller's backoff); `release`, given back without counting the
 * attempt (the worker is stopping), claimable again after `delayMs`.
 */
export type Settlement = ClaimRef &
  ({ outcome: 'completed' | 'failed'; error: string | null } | { outcome: 'retry'; delayMs: number; error: string } | { outcome: 'release'; delayMs: number; reason: string });

/**
 * Ends many claims in one statement, each conditional on its token and on the row still being `running`: a claim
 * rescued or released meanwhile is not touched, and its answer is false. The others are written whatever happened
 * to those. Rows are locked in intent order (see heartbeatClaims).
 */
export async function settleClaims(client: Runner, items: readonly Settlement[]): Promise<boolean[]> {
  if (items.length === 0) return [];
  const rows = await execOf(client)<{ settled: boolean }>(Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${items.map((i) => i.intentId)}::uuid[], ${items.map((i) => i.claimToken)}::bigint[], ${items.map((i) => i.outcome)}::text[],
                           ${items.map((i) => ('delayMs' in i ? i.delayMs : 0))}::int[], ${items.map((i) => ('reason' in i ? i.reason : i.error))}::text[])
        WITH ORDINALITY AS t(intent_id, claim_token, outcome, delay_ms, error, ord)
    ), mine AS (
      SELECT w.intent_id FROM intent_work w JOIN input i ON i.intent_id = w.intent_id AND i.claim_token = w.claim_token
      WHERE w.state = 'running' ORDER BY w.intent_id FOR UPDATE OF w
    ), settled AS (
      UPDATE intent_work w SET ${SETTLE}
      FROM input i, mine m
      WHERE w.intent_id = m.intent_id AND w.intent_id = i.intent_id AND w.claim_token = i.claim_token AND w.state = 'running'
      RETURNING w.intent_id, w.claim_token, w.state, w.run_id, w.round, w.claimed_at, w.claimed_by, w.last_error
    ), ${CLOSE_LEFT_OPEN}
    SELECT s.intent_id IS NOT NULL AS settled
    FROM input i LEFT JOIN settled s ON s.intent_id = i.intent_id AND s.claim_token = i.claim_token
    ORDER BY i.ord`);
  return rows.map((r) => r.settled);
}

/**
 * How a worker's run ends its claim, chosen by the worker from the run's outcome: `completed`; `retry` after
 * `delayMs` with `error`; `release` (a run interrupted by a stopping worker). An intent that the run leaves FAILED ends
 * its claim as `failed` with `failError` instead, whatever was chosen, unless it is released.
 */
export type ClaimEnd = { outcome: 'completed' | 'retry' | 'release'; delayMs: number; error: string | null; failError: string };

export type RunCloseAndClaimEnd = RunClose & { claimToken: string; claimEnd: ClaimEnd };
export type ClosedRunAndClaim = ClosedRun & { outcome: Settlement['outcome'] };

/**
 * A worker's run's last statement: its last step's end (when it has one to write), the run's end and the claim's
 * end, for many runs at once, each item all or nothing on its claim token (the claim rows locked FOR UPDATE in
 * intent order, as settleClaims does): a claim rescued meanwhile writes nothing and answers null, the others are
 * written. The step's end, the run's and the claim's were three statements; they are one because nothing a run does
 * falls between them.
 */
export async function closeRunsAndClaims(exec: Exec, items: readonly RunCloseAndClaimEnd[]): Promise<(ClosedRunAndClaim | null)[]> {
  const col = <V>(pick: (i: RunCloseAndClaimEnd) => V) => items.map(pick);
  return toClosed(
    await exec(Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${col((i) => i.intentId)}::uuid[], ${col((i) => i.claimToken)}::bigint[], ${col((i) => i.runId)}::uuid[],
                           ${stepEndColumns(items.map((i) => i.stepEnd))}, ${col((i) => i.status)}::text[], ${col((i) => i.error)}::text[],
                           ${col((i) => i.actor)}::text[], ${claimEndColumns(items)})
        WITH ORDINALITY AS t(intent_id, claim_token, run_id, step_id, bridge, step_status, result, step_error, run_status, run_error, actor,
                             claim_outcome, delay_ms, claim_error, fail_error, ord)
    ), ${heldClaims('UPDATE')},
    ${finishStepsCtes},
    ${finishRunsCtes},
    audit AS (${insertAudit(stepEndedAudit, runEndedAudit)}),
    ${END_CLAIMS}`),
  );
}

/**
 * closeRunsAndClaims for runs their claims opened and nothing has recorded yet (`opening`, PendingRun): each run is
 * recorded whole, finished, with its one step, their four audit events at the times they happened (the run's start
 * and its step's at the claim), and the claim ended, in one statement, each item all or nothing on its claim token.
 * What a run that changed nothing until its end costs: its claim and this. The start is audited before the step's end
 * in the order of writing, and nothing the run did falls between them (a bridge's first command records its run
 * first, lib/pipeline/run.ts).
 */
export async function recordRunsAndEndClaims(exec: Exec, items: readonly RunCloseAndClaimEnd[]): Promise<(ClosedRunAndClaim | null)[]> {
  const opening = items.map((i) => {
    if (!i.opening || !i.stepEnd || i.stepEnd.status === 'waiting') throw new Error('a run recorded whole at its close carries its opening and its one step\'s end');
    return i.opening;
  });
  const col = <V>(pick: (i: RunCloseAndClaimEnd) => V) => items.map(pick);
  return toClosed(
    await exec(Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(${pendingColumns(opening)}, ${col((i) => i.stepEnd!.status)}::text[], ${col((i) => json(i.stepEnd!.result))}::jsonb[],
                           ${col((i) => i.stepEnd!.error)}::text[], ${col((i) => i.status)}::text[], ${col((i) => i.error)}::text[], ${claimEndColumns(items)})
        WITH ORDINALITY AS t(${PENDING_NAMES}, step_status, result, step_error, run_status, run_error, claim_outcome, delay_ms, claim_error, fail_error, ord)
    ), ${heldClaims('UPDATE')},
    ${pendingOpening(true)},
    audit AS (${insertAudit(runStartedAudit, stepStartedAudit, stepEndedAudit, runEndedAudit)}),
    ${END_CLAIMS}`),
  );
}

const claimEndColumns = (items: readonly RunCloseAndClaimEnd[]) =>
  Prisma.sql`${items.map((i) => i.claimEnd.outcome)}::text[], ${items.map((i) => i.claimEnd.delayMs)}::int[], ${items.map((i) => i.claimEnd.error)}::text[],
             ${items.map((i) => i.claimEnd.failError)}::text[]`;

type ClosedRow = IntentRow & { finishedAt: Date | null; outcome: Settlement['outcome'] | null };
const toClosed = (rows: ClosedRow[]): (ClosedRunAndClaim | null)[] =>
  rows.map(({ finishedAt, outcome, ...row }) => {
    const intent = toIntent(row);
    return finishedAt && outcome && intent ? { finishedAt, intent, outcome } : null;
  });

/**
 * The claims' ends after their runs' (`input` with claim_outcome, delay_ms, claim_error, fail_error; `run`: the runs
 * closed or recorded), and the statement's answer, one row per item in order: a run that leaves its intent FAILED
 * ends its claim as `failed` unless it is given back.
 */
const END_CLAIMS = Prisma.sql`
    ending AS (
      SELECT x.intent_id, x.claim_token, x.outcome, x.delay_ms, CASE WHEN x.outcome = 'failed' THEN x.fail_error ELSE x.claim_error END AS error
      FROM (
        SELECT i.*, CASE WHEN i.claim_outcome <> 'release' AND it.status = 'FAILED' THEN 'failed' ELSE i.claim_outcome END AS outcome
        FROM input i JOIN run r ON r.id = i.run_id JOIN intents it ON it.id = i.intent_id
      ) x
    ), settled AS (
      UPDATE intent_work w SET ${SETTLE}
      FROM ending i
      WHERE w.intent_id = i.intent_id AND w.claim_token = i.claim_token AND w.state = 'running'
      RETURNING w.intent_id, w.claim_token
    )
    SELECT r.finished_at AS "finishedAt", e.outcome, ${intentColumns}
    FROM input i LEFT JOIN run r ON r.id = i.run_id LEFT JOIN ending e ON e.intent_id = i.intent_id AND r.id IS NOT NULL
         LEFT JOIN intents it ON it.id = i.intent_id AND r.id IS NOT NULL
    ORDER BY i.ord`;

/** Ends a claim for good: `completed` or `failed` (with the reason). False: the claim was no longer held. */
export async function finishClaim(client: Runner, args: ClaimRef & { state: 'completed' | 'failed'; error: string | null }): Promise<boolean> {
  return (await settleClaims(client, [{ intentId: args.intentId, claimToken: args.claimToken, outcome: args.state, error: args.error }]))[0];
}

/** A failed attempt with attempts left: retryable after `delayMs`. False: not held any more. */
export async function scheduleRetry(client: Runner, args: ClaimRef & { delayMs: number; error: string }): Promise<boolean> {
  return (await settleClaims(client, [{ ...args, outcome: 'retry' }]))[0];
}

/** Gives a claim back without counting the attempt, claimable again after `delayMs`. False: not held any more. */
export async function releaseClaim(client: Runner, args: ClaimRef & { delayMs: number; reason: string }): Promise<boolean> {
  return (await settleClaims(client, [{ ...args, outcome: 'release' }]))[0];
}

export type Rescued = { intentId: string; claimToken: string; claimedBy: string | null };

/**
 * Rescues claims whose lease ran out by the database's clock: they become retryable at once (the crash was the
 * worker's, not the intent's; the attempt stays counted, so an intent that keeps killing its workers still fails
 * after its maximum). Their runs are marked abandoned (a run its claim opened and nothing recorded is recorded as
 * abandoned) and each rescue is audited.
 *
 * A claim whose run had already ended `waiting` (its worker died between closing the run and giving the claim back)
 * is given back as the worker would have (suspendClaim): `waiting` until the deadline, or `available` at once when the
 * wait was decided, the attempt not counted. Counted, a crash in that moment of the last attempt would fail an intent
 * that only waited. The wait is read unlocked after the work row's lock: an answer deciding it meanwhile waits for
 * that lock and then finds the row `waiting`, and makes it due (waits.ts, wakeWork).
 */
const TO_WAIT = handedToWait('f');

export async function rescueStaleClaims(client: Runner, args: { rescuer: string; limit: number }): Promise<Rescued[]> {
  return execOf(client)<Rescued>(Prisma.sql`
    WITH stale AS MATERIALIZED (
      SELECT intent_id, claim_token FROM intent_work
      WHERE state = 'running' AND lease_until < now()
      ORDER BY lease_until
      LIMIT ${args.limit}
      FOR UPDATE SKIP LOCKED
    ), found AS MATERIALIZED (
      SELECT s.intent_id, wt.state, wt.deadline,
             EXISTS (SELECT 1 FROM pipeline_runs r WHERE r.intent_id = s.intent_id AND r.claim_token = s.claim_token AND r.status = 'waiting') AS waited
      FROM stale s
      LEFT JOIN LATERAL (SELECT x.state, x.deadline FROM pipeline_waits x WHERE x.intent_id = s.intent_id ORDER BY x.id DESC LIMIT 1) wt ON true
    ), rescued AS (
      UPDATE intent_work w SET
             state = CASE WHEN f.waited THEN ${TO_WAIT.state} ELSE 'retryable' END,
             run_after = CASE WHEN f.waited THEN ${TO_WAIT.runAfter} ELSE now() END,
             attempt = CASE WHEN f.waited THEN greatest(w.attempt - 1, 0) ELSE w.attempt END,
             rescues = w.rescues + 1, lease_until = NULL,
             last_error = format(CASE WHEN f.waited THEN 'claim %s of %s expired (last heartbeat %s) after its run stopped to wait; given back for the wait'
                                      ELSE 'claim %s of %s expired (last heartbeat %s); rescued' END,
                                 w.claim_token, coalesce(w.claimed_by, 'an unknown worker'), to_char(w.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS"Z"'))
      FROM found f
      WHERE w.intent_id = f.intent_id AND w.state = 'running' AND w.lease_until < now()
      RETURNING w.intent_id, w.claim_token, w.claimed_by, w.state, w.run_id, w.round, w.claimed_at
    ), runs AS (
      UPDATE pipeline_runs r SET status = 'abandoned', finished_at = now(), error = 'its worker stopped heartbeating; the claim was rescued'
      FROM rescued x
      WHERE r.claim_token = x.claim_token AND r.status = 'running'
    ), unrecorded AS (
      -- The run the claim named, not recorded yet: its worker stopped before the run's first write (during its first
      -- step, or before starting it).
      ${recordClaimsRuns('rescued', 'abandoned', Prisma.sql`'its worker stopped heartbeating before anything of the run was recorded (running its first bridge, or fetched ahead and not started); the claim was rescued'`)}
    ), steps AS (
      UPDATE pipeline_steps s SET status = 'abandoned', finished_at = now()
      FROM rescued x
      WHERE s.claim_token = x.claim_token AND s.status = 'running'
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT intent_id, 'claim_rescued', ${args.rescuer},
             jsonb_build_object('claimToken', claim_token::text, 'claimedBy', claimed_by) || CASE WHEN state IN ('waiting', 'available') THEN '{"forWait": true}'::jsonb ELSE '{}'::jsonb END
      FROM rescued
    )
    SELECT intent_id::text AS "intentId", claim_token::text AS "claimToken", claimed_by AS "claimedBy" FROM rescued`);
}

// ── The workers registry and their counts ────────────────────────────────────────────────────────────────────

export async function registerWorker(client: Runner, args: { id: string; name: string; host: string; pid: number; concurrency: number }): Promise<void> {
  await execOf(client)(Prisma.sql`
    INSERT INTO workers (id, name, host, pid, concurrency) VALUES (${args.id}::uuid, ${args.name}, ${args.host}, ${args.pid}, ${args.concurrency})`);
}

/**
 * The worker's heartbeat: its row (state, in-flight) and the events it counted since the last one, added to the
 * minute they are flushed in. Stopped workers of more than a day ago are forgotten here too.
 */
export async function heartbeatWorker(client: Runner, args: { id: string; state: 'running' | 'stopping' | 'stopped'; inFlight: number; events: string[]; counts: number[] }): Promise<void> {
  await execOf(client)(Prisma.sql`
    WITH me AS (
      UPDATE workers SET heartbeat_at = now(), in_flight = ${args.inFlight}, state = ${args.state},
                         stopped_at = CASE WHEN ${args.state} = 'stopped' THEN now() END
      WHERE id = ${args.id}::uuid
    ), counted AS (
      INSERT INTO worker_stats (minute, event, count)
      SELECT date_trunc('minute', now()), e, n FROM unnest(${args.events}::text[], ${args.counts}::bigint[]) AS t(e, n)
      ON CONFLICT (minute, event) DO UPDATE SET count = worker_stats.count + EXCLUDED.count
    )
    DELETE FROM workers WHERE heartbeat_at < now() - interval '1 day'`);
}
