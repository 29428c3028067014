import { z } from 'zod';
import { Prisma } from '@/generated/prisma/client';
import { db } from '@/lib/db/client';
import { announceCommitted } from '@/lib/live/announce';
import { DomainError, NotFoundError, ValidationError } from '@/lib/shared/errors';
import { intentIdSchema } from '@/lib/shared/fields';
import type { JsonObject, JsonValue } from '@/lib/shared/json';
import { fieldIssues, parseInput } from '@/lib/shared/validation';
import type { Actor } from '@/lib/shared/intent-types';
import { execOf, type Runner } from './repository';

/**
 * Waits for an answer from outside (docs/WORKERS.md, "Waits"): a bridge asks for an answer by name with a deadline
 * and a rule for a missed deadline; its run then ends as `waiting` and its claim is given back, so nothing is held
 * while it waits. The answer arrives through the API or the console (`answerWait`), or the workers fire the deadline
 * (`fireDueWaits`); the next run of the intent takes the bridge's step again and the bridge gets what was decided.
 *
 * Exactly one thing decides a wait: every decision is a conditional UPDATE of the wait's row from `waiting`, so the
 * first to take the row's lock decides and whoever comes next finds it decided (an answer's repeat is "already
 * applied", a different answer a conflict, an answer after the deadline fired "too late"). The decision makes the
 * intent's work row due in the same statement, so a worker claims it — also when the process that was to resume it
 * died: the claim is then rescued like any other. The run that consumes the decision marks the wait resumed, once.
 *
 * Locks, always in this order: the wait's row, then the intent's work row. The statements that decide a wait, the
 * worker's suspension (`suspendClaim`, `parkRun`) and the work queue's trigger (which cancels an intent's open wait
 * before it settles the row, prisma/functions/60_work_queue.sql) all take both so; the step's resume mark takes only
 * the wait's row. So none of them waits on another in a cycle.
 */

export const WAIT_TIMEOUT_RULES = ['fail', 'retry', 'continue'] as const;
/** What a missed deadline does: fail the intent, fail the attempt (the worker retries it, asking again), or go on with the default. */
export type WaitTimeoutRule = (typeof WAIT_TIMEOUT_RULES)[number];

const WAIT_NAME = /^[a-z][a-z0-9_.-]{0,63}$/;
const waitNameSchema = z.string({ error: 'must be a string' }).regex(WAIT_NAME, { error: 'must be lower-case letters, digits, ., - or _ (up to 64), starting with a letter' });

/** What a bridge asks for: `ctx.waitFor(spec)`. */
export type WaitSpec = {
  name: string;
  /** What it waits for, in words: shown on the intent and Workers pages. */
  prompt?: string;
  /** The deadline, from now by the database's clock. */
  timeoutMs: number;
  onTimeout: WaitTimeoutRule;
  /** The answer a missed deadline gives under `continue`. */
  default?: JsonValue;
  /**
   * The answer's shape. An answer that does not match it is refused with 400 naming the field, before anything is
   * recorded, and callers see it beside the prompt (as JSON Schema, so it must be representable as one: no dates,
   * transforms or refinements). Without it, any JSON object is accepted and the bridge reads what it gets.
   */
  answer?: z.ZodType;
};

/** What the bridge gets back once the wait is decided. */
export type WaitAnswer = { name: string; outcome: 'answered' | 'timed_out'; answer: JsonValue | null; answeredBy: string | null };

export type WaitState = 'waiting' | 'answered' | 'timed_out' | 'cancelled';

/** A wait as the console and the API show it. */
export type WaitView = {
  id: string;
  intentId: string;
  round: number;
  bridge: string;
  name: string;
  prompt: string | null;
  state: WaitState;
  deadline: string;
  onTimeout: WaitTimeoutRule;
  /** What an answer must look like (JSON Schema), when the bridge said; null: any JSON object. */
  answerSchema: JsonObject | null;
  answer: JsonValue | null;
  answeredBy: string | null;
  decidedAt: string | null;
  resumedAt: string | null;
  createdAt: string;
};

/** Thrown inside a bridge by `ctx.waitFor` when the answer is not there yet: the run ends as `waiting` (run.ts). */
export class WaitSuspended extends Error {
  constructor(readonly wait: WaitView) {
    super(`waiting for "${wait.name}" until ${wait.deadline}`);
    this.name = 'WaitSuspended';
  }
}

/** A wait's deadline passed without an answer, under the rule `fail` (the intent fails) or `retry` (the attempt fails). */
export class WaitDeadlineMissedError extends DomainError {
  readonly code = 'wait_deadline_missed';
  readonly httpStatus = 409;
  constructor(
    message: string,
    readonly failsIntent: boolean,
    details?: unknown,
  ) {
    super(message, details);
  }
}

/** A different answer arrived after the wait was answered. */
export class AnswerConflictError extends DomainError {
  readonly code = 'answer_conflict';
  readonly httpStatus = 409;
}

/** The wait was decided otherwise (its deadline fired, or the intent left the pipeline): the answer is too late. */
export class WaitClosedError extends DomainError {
  readonly code = 'wait_closed';
  readonly httpStatus = 409;
}

type WaitRow = Omit<WaitView, 'deadline' | 'decidedAt' | 'resumedAt' | 'createdAt'> & {
  deadline: Date;
  decidedAt: Date | null;
  resumedAt: Date | null;
  createdAt: Date;
  defaultAnswer: JsonValue | null;
};

const WAIT_COLUMNS = (alias: string) =>
  Prisma.raw(`${alias}.id::text AS id, ${alias}.intent_id::text AS "intentId", ${alias}.round, ${alias}.bridge, ${alias}.name, ${alias}.prompt,
    ${alias}.state, ${alias}.deadline, ${alias}.on_timeout AS "onTimeout", ${alias}.answer_schema AS "answerSchema", ${alias}.answer, ${alias}.answered_by AS "answeredBy",
    ${alias}.decided_at AS "decidedAt", ${alias}.resumed_at AS "resumedAt", ${alias}.created_at AS "createdAt", ${alias}.default_answer AS "defaultAnswer"`);

export function toWaitView(row: WaitRow): WaitView {
  return {
    id: row.id,
    intentId: row.intentId,
    round: row.round,
    bridge: row.bridge,
    name: row.name,
    prompt: row.prompt,
    state: row.state,
    deadline: row.deadline.toISOString(),
    onTimeout: row.onTimeout,
    answerSchema: row.answerSchema ?? null,
    answer: row.answer ?? null,
    answeredBy: row.answeredBy,
    decidedAt: row.decidedAt?.toISOString() ?? null,
    resumedAt: row.resumedAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

const json = (value: JsonValue | undefined) => (value === undefined ? null : JSON.stringify(value));

export type WaitStep = { intentId: string; round: number; runId: string; bridge: string; claimToken: string | null; actor: string };

type Consulted = { claimHeld: boolean; latest: WaitRow | null; opened: WaitRow | null; resumedNow: boolean };

/**
 * The bridge's step asks for its wait: in one statement, the step's latest wait of that name is read, a new one is
 * opened when there is none (or the last was cancelled, or missed its deadline under `retry` and was consumed by the
 * attempt that failed for it), and a decided one not consumed yet is marked resumed by this run — once: a run after a
 * crash finds it resumed and gets the same decision. A worker's step writes only while its claim is running (a
 * claim rescued meanwhile writes nothing; its run stops).
 */
async function consultWait(client: Runner, step: WaitStep, spec: WaitSpec, answerSchema: JsonObject | null): Promise<Consulted> {
  const [row] = await execOf(client)<{ claimHeld: boolean; latest: WaitRow | null; opened: WaitRow | null; resumedNow: boolean }>(Prisma.sql`
    WITH held AS (
      SELECT ${step.claimToken}::bigint IS NULL
             OR EXISTS (SELECT 1 FROM intent_work w WHERE w.intent_id = ${step.intentId}::uuid AND w.claim_token = ${step.claimToken}::bigint AND w.state = 'running') AS ok
    ), latest AS MATERIALIZED (
      SELECT * FROM pipeline_waits
      WHERE intent_id = ${step.intentId}::uuid AND name = ${spec.name} AND round = ${step.round} AND bridge = ${step.bridge}
      ORDER BY id DESC LIMIT 1
    ), opened AS (
      INSERT INTO pipeline_waits (intent_id, round, bridge, name, prompt, run_id, claim_token, deadline, on_timeout, default_answer, answer_schema)
      SELECT ${step.intentId}::uuid, ${step.round}, ${step.bridge}, ${spec.name}, ${spec.prompt ?? null}, ${step.runId}::uuid, ${step.claimToken}::bigint,
             now() + ${spec.timeoutMs} * interval '1 millisecond', ${spec.onTimeout}, ${json(spec.default)}::jsonb, ${json(answerSchema ?? undefined)}::jsonb
      FROM held
      WHERE held.ok AND NOT EXISTS (
        SELECT 1 FROM latest l
        WHERE l.state IN ('waiting', 'answered') OR (l.state = 'timed_out' AND (l.on_timeout <> 'retry' OR l.resumed_at IS NULL))
      )
      ON CONFLICT (intent_id) WHERE state = 'waiting' DO NOTHING
      RETURNING *
    ), resumed AS (
      UPDATE pipeline_waits w SET resumed_at = now(), resumed_by = ${step.actor}
      FROM latest l, held
      WHERE w.id = l.id AND held.ok AND w.state IN ('answered', 'timed_out') AND w.resumed_at IS NULL
      RETURNING w.id, w.intent_id, w.name, w.state
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT o.intent_id, 'wait_opened', ${step.actor},
             jsonb_build_object('waitId', o.id::text, 'name', o.name, 'bridge', o.bridge, 'runId', o.run_id::text, 'deadline', o.deadline, 'onTimeout', o.on_timeout)
      FROM opened o
      UNION ALL
      SELECT r.intent_id, 'wait_resumed', ${step.actor}, jsonb_build_object('waitId', r.id::text, 'name', r.name, 'state', r.state, 'runId', ${step.runId}::text)
      FROM resumed r
    )
    SELECT (SELECT ok FROM held) AS "claimHeld",
           (SELECT to_jsonb(l) FROM latest l) AS latest,
           (SELECT to_jsonb(o) FROM opened o) AS opened,
           EXISTS (SELECT 1 FROM resumed) AS "resumedNow"`);
  return { claimHeld: row.claimHeld, latest: fromJsonRow(row.latest), opened: fromJsonRow(row.opened), resumedNow: row.resumedNow };
}

/** A pipeline_waits row as `to_jsonb` gives it (snake_case, timestamps as text). */
function fromJsonRow(raw: unknown): WaitRow | null {
  if (!raw) return null;
  const r = raw as Record<string, JsonValue>;
  const date = (v: JsonValue) => (v === null ? null : new Date(String(v)));
  return {
    id: String(r.id),
    intentId: String(r.intent_id),
    round: Number(r.round),
    bridge: String(r.bridge),
    name: String(r.name),
    prompt: (r.prompt as string | null) ?? null,
    state: r.state as WaitState,
    deadline: date(r.deadline)!,
    onTimeout: r.on_timeout as WaitTimeoutRule,
    answerSchema: (r.answer_schema as JsonObject | null) ?? null,
    answer: r.answer ?? null,
    answeredBy: (r.answered_by as string | null) ?? null,
    decidedAt: date(r.decided_at),
    resumedAt: date(r.resumed_at),
    createdAt: date(r.created_at)!,
    defaultAnswer: r.default_answer ?? null,
  };
}

/**
 * The JSON Schema of the answer a wait accepts (null: any JSON object), checked as the bridge asks: a shape JSON Schema
 * cannot say, or a default answer that does not fit it, is the bridge's mistake, found on its first wait rather than
 * when somebody answers.
 */
function answerSchemaOf(spec: WaitSpec): JsonObject | null {
  if (!spec.answer) return null;
  let schema: JsonObject;
  try {
    schema = z.toJSONSchema(spec.answer, { io: 'input' }) as JsonObject;
  } catch (err) {
    throw new Error(`the answer schema of the wait "${spec.name}" cannot be written as JSON Schema: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (spec.default !== undefined && !spec.answer.safeParse(spec.default).success) {
    throw new Error(`the default answer of the wait "${spec.name}" does not match its answer schema`);
  }
  return schema;
}

/**
 * An answer's body against its wait's schema, as the API and the console receive it: a ValidationError naming each
 * bad field as `body.<path>` (the field of the request that carries it). The schema is the one stored with the wait,
 * so the console and API processes need none of the workers' bridge code to check it.
 */
function checkAnswer(schema: JsonObject | null, body: JsonObject): void {
  if (!schema) return;
  const parsed = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]).safeParse(body);
  if (parsed.success) return;
  throw new ValidationError(fieldIssues(parsed.error, body, '$').map((i) => ({ ...i, field: i.field.replace(/^\$/, 'body') })));
}

/**
 * `ctx.waitFor`: the decision when there is one, else the run suspends (WaitSuspended). `lost` is called when the
 * worker's claim is no longer held (the caller throws its LostClaimError).
 */
export async function awaitAnswer(client: Runner, step: WaitStep, spec: WaitSpec, lost: () => Error): Promise<WaitAnswer> {
  parseInput(waitNameSchema, spec.name, 'name');
  if (!WAIT_TIMEOUT_RULES.includes(spec.onTimeout)) throw new Error(`onTimeout must be one of ${WAIT_TIMEOUT_RULES.join(', ')}`);
  if (!Number.isFinite(spec.timeoutMs) || spec.timeoutMs < 0) throw new Error('timeoutMs must be a non-negative number of milliseconds');
  const c = await consultWait(client, step, spec, answerSchemaOf(spec));
  if (!c.claimHeld) throw lost();
  if (c.opened) throw new WaitSuspended(toWaitView(c.opened));
  const wait = c.latest;
  if (!wait) throw new Error(`the wait "${spec.name}" of intent ${step.intentId} could not be opened: another wait of the intent is open`);
  // A deadline missed under `retry` and consumed by an earlier attempt opens a new wait (handled above): what is left
  // here is a wait still open, or decided and now (or earlier, before a crash) consumed by this step.
  if (wait.state === 'waiting' || wait.state === 'cancelled') throw new WaitSuspended(toWaitView(wait));
  if (wait.state === 'answered') return { name: wait.name, outcome: 'answered', answer: wait.answer, answeredBy: wait.answeredBy };
  const missed = `the wait "${wait.name}" missed its deadline (${wait.deadline.toISOString()})`;
  switch (wait.onTimeout) {
    case 'continue':
      return { name: wait.name, outcome: 'timed_out', answer: wait.defaultAnswer, answeredBy: null };
    case 'fail':
      throw new WaitDeadlineMissedError(`${missed}: the bridge fails the intent`, true, { waitId: wait.id, name: wait.name });
    case 'retry':
      throw new WaitDeadlineMissedError(`${missed}: the attempt fails and the next asks again`, false, { waitId: wait.id, name: wait.name });
  }
}

// ── The worker's side: give the claim back while waiting, fire deadlines ──────────────────────────────────────────

/**
 * Where an intent's work row goes when it is handed over to its wait (`x`: the intent's latest wait, with its
 * `state` and `deadline`): `waiting` until the deadline, or `available` at once when the wait was decided already.
 * Written once for the worker's suspension, an operator's parked run and the rescue of a claim whose run had
 * stopped to wait (lib/workers/repository.ts).
 */
export const handedToWait = (x: string) => ({
  state: Prisma.raw(`CASE WHEN ${x}.state = 'waiting' THEN 'waiting' ELSE 'available' END`),
  runAfter: Prisma.raw(`CASE WHEN ${x}.state = 'waiting' THEN ${x}.deadline ELSE now() END`),
});
const TO_WAIT = handedToWait('x');

/**
 * A worker's run ended `waiting`: the claim is given back without counting the attempt, and the work row becomes
 * `waiting` until the deadline (no lease, nothing claims it) — or `available` at once when the wait was decided
 * between the bridge's question and now (an answer that came meanwhile found the row still running and could not
 * make it due). The wait's row is locked first, as every decision locks it, so an answer either committed before
 * (and is seen here) or comes after (and finds the row `waiting`). False: the claim was no longer held.
 */
export async function suspendClaim(client: Runner, args: { intentId: string; claimToken: string }): Promise<{ settled: boolean; state: 'waiting' | 'available' | null }> {
  const [row] = await execOf(client)<{ state: 'waiting' | 'available' }>(Prisma.sql`
    WITH wait AS MATERIALIZED (
      SELECT id, state, deadline FROM pipeline_waits WHERE intent_id = ${args.intentId}::uuid ORDER BY id DESC LIMIT 1 FOR SHARE
    ), suspended AS (
      UPDATE intent_work w SET
        state = ${TO_WAIT.state},
        run_after = ${TO_WAIT.runAfter},
        attempt = greatest(w.attempt - 1, 0),
        lease_until = NULL
      FROM (SELECT 1) one LEFT JOIN wait x ON true
      WHERE w.intent_id = ${args.intentId}::uuid AND w.claim_token = ${args.claimToken}::bigint AND w.state = 'running'
      RETURNING w.state
    )
    SELECT state FROM suspended`);
  if (row?.state === 'available') announceCommitted({ workQueued: true });
  return { settled: !!row, state: row?.state ?? null };
}

/**
 * An operator's run (API or console) stopped to wait: the intent's work row becomes `waiting` in the run's round, so
 * that the decision makes it due and a worker resumes it, as for a worker's own run. A row a worker holds is left
 * alone (it cannot be: the operator's run excluded it). Locks as `suspendClaim` does.
 */
export async function parkRun(client: Runner, args: { intentId: string; round: number }): Promise<void> {
  await execOf(client)(Prisma.sql`
    WITH wait AS MATERIALIZED (
      SELECT id, state, deadline FROM pipeline_waits WHERE intent_id = ${args.intentId}::uuid ORDER BY id DESC LIMIT 1 FOR SHARE
    )
    INSERT INTO intent_work (intent_id, round, state, run_after)
    SELECT ${args.intentId}::uuid, ${args.round}, ${TO_WAIT.state}, ${TO_WAIT.runAfter}
    FROM (SELECT 1) one LEFT JOIN wait x ON true
    WHERE NOT EXISTS (SELECT 1 FROM intents i WHERE i.id = ${args.intentId}::uuid AND i.is_replay)
    ON CONFLICT (intent_id) DO UPDATE SET state = EXCLUDED.state, round = EXCLUDED.round, run_after = EXCLUDED.run_after, attempt = 0,
      claimed_by = NULL, claimed_at = NULL, heartbeat_at = NULL, lease_until = NULL, finished_at = NULL
    WHERE intent_work.state <> 'running'`);
  announceCommitted({ workQueued: true });
}

/**
 * The workers fire the deadlines that passed, by the database's clock (as the rescue does): each open wait becomes
 * `timed_out` and its intent's work row due, in one statement. Waits being decided meanwhile are waited for (no
 * SKIP LOCKED) and then found decided: exactly one of the answer and the deadline decides.
 */
export async function fireDueWaits(client: Runner, args: { actor: string; limit: number }): Promise<{ intentId: string; name: string }[]> {
  const rows = await execOf(client)<{ intentId: string; name: string }>(Prisma.sql`
    WITH due AS MATERIALIZED (
      SELECT id FROM pipeline_waits WHERE state = 'waiting' AND deadline <= now() ORDER BY id LIMIT ${args.limit} FOR UPDATE
    ), fired AS MATERIALIZED (
      UPDATE pipeline_waits w SET state = 'timed_out', decided_at = now()
      FROM due d WHERE w.id = d.id AND w.state = 'waiting'
      RETURNING w.id, w.intent_id, w.name, w.on_timeout, w.deadline
    ), woken AS (
      ${wakeWork(Prisma.sql`fired`)}
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT f.intent_id, 'wait_timed_out', ${args.actor}, jsonb_build_object('waitId', f.id::text, 'name', f.name, 'onTimeout', f.on_timeout, 'deadline', f.deadline)
      FROM fired f
    )
    SELECT intent_id::text AS "intentId", name FROM fired ORDER BY id`);
  if (rows.length) announceCommitted({ workQueued: true });
  return rows;
}

/**
 * Makes the decided waits' work rows due. A row still `running` (its worker is between the bridge's question and
 * giving the claim back) is matched too: its lock is then waited for, and the row re-read once its worker
 * committed — a row found `waiting` only after that wait is made due; one still running is left to `suspendClaim`,
 * which sees the decision.
 */
const wakeWork = (decided: Prisma.Sql) => Prisma.sql`
      UPDATE intent_work wk SET
        state = CASE WHEN wk.state = 'waiting' THEN 'available' ELSE wk.state END,
        run_after = CASE WHEN wk.state = 'waiting' THEN now() ELSE wk.run_after END
      FROM ${decided} d
      WHERE wk.intent_id = d.intent_id AND wk.state IN ('waiting', 'running')`;

// ── Answers from outside ──────────────────────────────────────────────────────────────────────────────────────────

export const answerBodySchema = z.strictObject({
  name: waitNameSchema,
  body: z.record(z.string(), z.json(), { error: 'must be a JSON object' }),
});
export const answerInputSchema = answerBodySchema.extend({ id: intentIdSchema });
export type AnswerInput = z.input<typeof answerInputSchema>;

export type AnswerOutcome = 'accepted' | 'already_applied' | 'conflict' | 'too_late';
export type AnswerResult = { outcome: 'accepted' | 'already_applied'; wait: WaitView };

/**
 * An answer to the intent's latest wait of that name, in one statement: the wait's row is locked, and the answer
 * decides it only while it is `waiting` (making the work row due in the same statement, so any worker resumes the
 * run). Whatever the outcome, the answer is recorded with it and audited. Accepted or a repeat of the accepted
 * answer (the same body): the wait. A different body after it: 409 `answer_conflict`. A wait decided otherwise: 409
 * `wait_closed`. No wait of that name: 404.
 */
export async function answerWait(input: AnswerInput, actor: Actor): Promise<AnswerResult> {
  const { id: rawId, name, body } = parseInput(answerInputSchema, input);
  const id = rawId.toLowerCase();
  // The wait answered is the latest of that name as read here: its schema checks the body before anything is written,
  // and the statement then decides that very wait (a newer one opened meanwhile is not answered by a body checked
  // against another's schema).
  const [latest] = await db().$queryRaw<{ id: string | null; answerSchema: JsonObject | null }[]>(Prisma.sql`
    SELECT w.id::text AS id, w.answer_schema AS "answerSchema"
    FROM intents i LEFT JOIN LATERAL (
      SELECT id, answer_schema FROM pipeline_waits WHERE intent_id = i.id AND name = ${name} ORDER BY id DESC LIMIT 1
    ) w ON true
    WHERE i.id = ${id}::uuid`);
  // Which of the two is missing, said plainly: a caller with a wrong id learns that, not that the wait is unknown.
  if (!latest) throw new NotFoundError(`Intent ${id}`, { id });
  if (!latest.id) throw new NotFoundError(`A wait named "${name}" on intent ${id}`, { id, name });
  checkAnswer(latest.answerSchema, body as JsonObject);
  const [row] = await db().$queryRaw<(WaitRow & { outcome: AnswerOutcome })[]>(Prisma.sql`
    WITH target AS MATERIALIZED (
      SELECT * FROM pipeline_waits WHERE id = ${latest.id}::bigint FOR UPDATE
    ), decided AS MATERIALIZED (
      UPDATE pipeline_waits w SET state = 'answered', answer = ${JSON.stringify(body)}::jsonb, answered_by = ${actor.name}, decided_at = now()
      FROM target t WHERE w.id = t.id AND w.state = 'waiting'
      RETURNING w.*
    ), woken AS (
      ${wakeWork(Prisma.sql`decided`)}
    ), outcome AS (
      SELECT t.id, t.intent_id, t.round, t.bridge, t.name, t.prompt, COALESCE(d.state, t.state) AS state, t.deadline, t.on_timeout, t.answer_schema,
             COALESCE(d.answer, t.answer) AS answer, COALESCE(d.answered_by, t.answered_by) AS answered_by,
             COALESCE(d.decided_at, t.decided_at) AS decided_at, t.resumed_at, t.created_at, t.default_answer,
             CASE WHEN d.id IS NOT NULL THEN 'accepted'
                  WHEN t.state = 'answered' AND t.answer = ${JSON.stringify(body)}::jsonb THEN 'already_applied'
                  WHEN t.state = 'answered' THEN 'conflict'
                  ELSE 'too_late' END AS outcome
      FROM target t LEFT JOIN decided d ON d.id = t.id
    ), recorded AS (
      INSERT INTO pipeline_wait_answers (wait_id, intent_id, body, actor, outcome)
      SELECT o.id, o.intent_id, ${JSON.stringify(body)}::jsonb, ${actor.name}, o.outcome FROM outcome o
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT o.intent_id, 'wait_answered', ${actor.name}, jsonb_build_object('waitId', o.id::text, 'name', o.name, 'outcome', o.outcome, 'state', o.state, 'answer', ${JSON.stringify(body)}::jsonb)
      FROM outcome o
    )
    SELECT o.outcome, ${WAIT_COLUMNS('o')} FROM outcome o`);
  if (!row) {
    throw new NotFoundError(`A wait named "${name}" on intent ${id}`, { id, name });
  }
  const wait = toWaitView(row);
  if (row.outcome === 'accepted') announceCommitted({ workQueued: true });
  if (row.outcome === 'conflict') {
    throw new AnswerConflictError(`The wait "${name}" of intent ${id} was already answered with a different body (by ${wait.answeredBy}); this answer was recorded and not applied.`, {
      id,
      name,
      state: wait.state,
    });
  }
  if (row.outcome === 'too_late') {
    const why = wait.state === 'timed_out' ? `its deadline (${wait.deadline}) fired first` : 'the intent left the pipeline before it was answered';
    throw new WaitClosedError(`The wait "${name}" of intent ${id} is closed: ${why}. The answer was recorded and not applied.`, { id, name, state: wait.state });
  }
  return { outcome: row.outcome, wait };
}

// ── What the console shows ───────────────────────────────────────────────────────────────────────────────────────

/** The intent's latest waits (newest first), the open one, if any, first: its pipeline history carries them. */
export async function selectIntentWaits(client: Runner, intentId: string, limit = 10): Promise<WaitView[]> {
  const rows = await execOf(client)<WaitRow>(Prisma.sql`
    SELECT ${WAIT_COLUMNS('w')} FROM pipeline_waits w WHERE w.intent_id = ${intentId}::uuid ORDER BY (w.state = 'waiting') DESC, w.id DESC LIMIT ${limit}`);
  return rows.map(toWaitView);
}

/** Every open wait, the nearest deadline first (the Workers page's list). */
export async function listOpenWaits(client: Runner, limit = 50): Promise<WaitView[]> {
  const rows = await execOf(client)<WaitRow>(Prisma.sql`
    SELECT ${WAIT_COLUMNS('w')} FROM pipeline_waits w WHERE w.state = 'waiting' ORDER BY w.deadline, w.id LIMIT ${limit}`);
  return rows.map(toWaitView);
}

