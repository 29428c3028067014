import { z } from 'zod';
import { db, queryOnPool } from '@/lib/db/client';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { InvalidTransitionError, LockTimeoutError } from '@/lib/intents/errors';
import { DomainError, NotFoundError } from '@/lib/shared/errors';
import type { JsonObject, JsonValue } from '@/lib/shared/json';
import { getIntent } from '@/lib/intents/queries';
import { updateStatusSchema } from '@/lib/intents/schemas';
import { intentIdSchema } from '@/lib/shared/fields';
import { parseInput } from '@/lib/shared/validation';
import type { Actor } from '@/lib/shared/intent-types';
import { FencingTokenStaleError } from '@/lib/leases/errors';
import { fencingError } from '@/lib/leases/fencing';
import { CLAIM_FENCE_PREFIX, fencingSchema, type Fencing } from '@/lib/leases/schemas';
import { announceCommitted } from '@/lib/live/announce';
import { resolveBridgeSet } from './bridges';
import { FinalBridgeError, LostClaimError } from './errors';
import { withPipelineLock } from './lock';
import { selectRuns, type PendingRun, type StartedRun, type StartedStep, type StepEnd } from './repository';
import { batchedWriter, directWriter, type RunWriter } from './writer';
import { awaitAnswer, parkRun, WaitDeadlineMissedError, WaitSuspended, type WaitView } from './waits';
import { PIPELINE_MODES, type BridgeContext, type PipelineDoor, type PipelineIntent, type PipelineMode, type PipelineResult, type PipelineRun, type PipelineRunRecord, type PipelineStep, type RunStatus } from './types';

/**
 * Executes the BridgeSet on one intent alone: an operator's run under the execution lock (lock.ts: NOWAIT, a second
 * execution gets 423 `lock_timeout`), a worker's under its claim, which excludes every other worker and every
 * operator's run (lock.ts says how). Every step's start and end is recorded and audited; a step the intent's round has already
 * completed is replayed from its record instead of run again, so a run after a crash redoes nothing that finished.
 *
 * FAILFAST: the first failing bridge fails the intent (through the engine) and the run stops. CONTINUE: the failure
 * is recorded and the next bridge runs. A worker's run that has attempts left stops at the first failure without
 * failing the intent (the worker schedules the retry): `failIntentOnFailure: false`.
 *
 * Fencing: a run may carry `fencing: { resource, token }` (a lease it holds, docs/LEASES.md). The run is refused at
 * its start (409 `fencing_token_stale`, nothing recorded) unless its token is the resource's current grant, and every
 * engine command its bridges issue carries the same fence, so a holder that lost its lease mid-run has its next
 * write refused by the engine. A worker's run is fenced by its claim token (claimFence): a rescued worker's late
 * bridge writes are refused by the engine once the intent's next claim has started its run, even when the intent's
 * version did not move in between.
 */
export const runPipelineSchema = z.strictObject({
  mode: z.enum(PIPELINE_MODES, { error: `must be one of ${PIPELINE_MODES.join(', ')}` }).optional(),
  /** A run protected by a lease: accepted only with the resource's current grant (409 fencing_token_stale otherwise). */
  fencing: fencingSchema.optional(),
});
export const runPipelineInputSchema = runPipelineSchema.extend({ id: intentIdSchema });
export type RunPipelineInput = z.input<typeof runPipelineInputSchema>;
/** An operator's retry of a FAILED intent: the run's input and the version the operator saw. */
export const retryPipelineInputSchema = runPipelineInputSchema.extend({ expectedVersion: updateStatusSchema.shape.expectedVersion });
export type RetryPipelineInput = z.input<typeof retryPipelineInputSchema>;

/**
 * A worker's claim as a fence: claim tokens come from one sequence, so the intent's next claim always has a higher
 * token than a rescued one. The resource is reserved for it (CLAIM_FENCE_PREFIX): nobody can take a lease on it.
 */
export function claimFence(intentId: string, claimToken: string): Fencing {
  return { resource: `${CLAIM_FENCE_PREFIX}${intentId.toLowerCase()}`, token: Number(claimToken) };
}

export type RunPipelineOptions = {
  door?: PipelineDoor;
  /** Bridge names (default: PIPELINE_BRIDGES). */
  bridges?: readonly string[];
  /** A worker's claim: every write of the run is conditional on it. */
  claimToken?: string;
  /** FAILFAST marks the intent FAILED at the first failing bridge (default true). */
  failIntentOnFailure?: boolean;
  /** Checked between bridges: an aborted run stops as `interrupted` without starting the next bridge. */
  signal?: AbortSignal;
  /**
   * A rerun's reused steps, by bridge: recorded from an earlier round's result instead of run (`replayed`, or
   * `skipped` again when the earlier round skipped it). Bridges not named here run as usual.
   */
  reuse?: ReadonlyMap<string, ReusedStep>;
  /** Added to the run's `pipeline_started` audit event. */
  startDetails?: JsonObject;
  /**
   * The run and its first bridge's step, opened already by the statement that claimed the intent (a worker's claim,
   * lib/workers/repository.ts): the run starts at that step's bridge with no statement of its own. `pending`: not
   * recorded yet; the run's first write records them (recordRun), or its close records the run whole.
   */
  opened?: { run: StartedRun; firstStep: StartedStep; pending?: PendingRun };
  /** Where a worker's run writes its records (default: the process's batched writer; an operator's run: Prisma). */
  writer?: RunWriter;
};

/** A step a rerun takes from an earlier round: its recorded result, or `skipped` when it did not run then either. */
export type ReusedStep = { status: 'replayed'; result: JsonValue } | { status: 'skipped' };

/** An audit reason the engine accepts (at most 500 UTF-16 units), cut between characters, never inside one. */
export function auditReason(text: string): string {
  return Array.from(text).slice(0, 240).join('');
}

function errorText(err: unknown): string {
  if (err instanceof DomainError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

type Bridge = ReturnType<typeof resolveBridgeSet>[number];
type Opened = StartedRun & { runId: string; round: number };
type Outcome = Exclude<RunStatus, 'running' | 'abandoned'>;

/** Everything a run needs to know, settled before it takes the lock. */
type RunPlan = {
  id: string;
  mode: PipelineMode;
  bridges: Bridge[];
  door: PipelineDoor;
  actor: Actor;
  /** The worker's claim token, or null for an operator's run. */
  token: string | null;
  fencing: Fencing | null;
  /** Where the run's records go: a worker's are batched with the other runs of its process. */
  writer: RunWriter;
  failIntent: boolean;
  signal: AbortSignal;
  reuse: ReadonlyMap<string, ReusedStep>;
  startDetails: JsonObject | undefined;
  opened: RunPipelineOptions['opened'];
  /** A run its claim opened and nothing has recorded yet (recordRun), and its first step's id once recorded. */
  recording: { pending: PendingRun | null; written: Promise<string> | null };
};

function planRun(input: RunPipelineInput, actor: Actor, options: RunPipelineOptions): RunPlan {
  const parsed = parseInput(runPipelineInputSchema, input);
  const id = parsed.id.toLowerCase();
  const token = options.claimToken ?? null;
  const fencing = token !== null ? claimFence(id, token) : (parsed.fencing ?? null);
  return {
    id,
    mode: parsed.mode ?? 'FAILFAST',
    bridges: [...resolveBridgeSet(options.bridges)],
    door: options.door ?? 'api',
    actor,
    token,
    fencing,
    // A worker's claim granted its fence already (the claim statement): its run's start has nothing to check.
    writer: token !== null ? (options.writer ?? batchedWriter()) : directWriter(fencing),
    failIntent: options.failIntentOnFailure ?? true,
    signal: options.signal ?? new AbortController().signal,
    reuse: options.reuse ?? new Map(),
    startDetails: options.startDetails,
    // Only a worker's claim opens runs ahead of the run.
    opened: token !== null ? options.opened : undefined,
    recording: { pending: (token !== null ? options.opened?.pending : undefined) ?? null, written: null },
  };
}

/**
 * Records the run its claim opened (PendingRun), once, before the run's first other write: a bridge's first command,
 * a step's end when another bridge follows, a wait. So the run's start comes before anything the run did, in the
 * order of writing that the intent's timeline follows. A run that wrote nothing until its close is recorded whole
 * by the close instead (closeRun). Answers the first step's id.
 */
function recordRun(plan: RunPlan): Promise<string> {
  if (plan.recording.written) return plan.recording.written;
  const { pending } = plan.recording;
  // A rejection, never a throw: the timer that records a slow first step calls this with nobody to catch a throw.
  if (!pending) return Promise.reject(new Error('only a run its claim opened is recorded after it started'));
  plan.recording.written = plan.writer.recordOpened(pending).then((stepId) => {
    if (stepId === null) throw new LostClaimError(`The claim on intent ${plan.id} was lost before its run could be recorded.`, { intentId: plan.id });
    plan.recording.pending = null;
    announceCommitted();
    return stepId;
  });
  return plan.recording.written;
}

/**
 * How long a first step may run unrecorded. A bridge that writes nothing for longer (one waiting on a slow service)
 * has its run recorded anyway, so that the intent's timeline and audit say it is running; a quick one is recorded
 * whole at its close.
 */
const RECORD_RUNNING_AFTER_MS = 1_000;

/** Makes sure the run is recorded before a write of its own (recordRun); nothing to do for a run recorded already. */
async function beforeWriting(plan: RunPlan): Promise<void> {
  if (plan.recording.pending || plan.recording.written) await recordRun(plan);
}

/** For a worker, a refused fence means a newer claim of the intent has started: the claim is lost. */
function refusal(plan: RunPlan, err: FencingTokenStaleError): Error {
  return plan.token !== null
    ? new LostClaimError(`The claim on intent ${plan.id} was superseded by a newer claim (its fence refused the write).`, { intentId: plan.id, claimToken: plan.token })
    : err;
}

/** The run's fence for the engine's commands, passed beside their input (a claim fence is no input's to name). */
const withFence = (plan: RunPlan) => (plan.fencing ? { fencing: plan.fencing } : {});
const at = (d: Date | null) => d?.toISOString() ?? null;

/**
 * Records the run's start, or says why it cannot start (lost claim, a worker's claim on the intent, unknown intent,
 * a terminal status, a stale fence).
 */
async function openRun(plan: RunPlan): Promise<Opened> {
  let started: StartedRun;
  if (plan.opened) return checkOpened(plan, plan.opened.run);
  try {
    started = await plan.writer.startRun({ intentId: plan.id, mode: plan.mode, door: plan.door, actor: plan.actor.name, claimToken: plan.token, details: plan.startDetails });
  } catch (err) {
    const stale = await fencingError(err, plan.fencing);
    throw stale ? refusal(plan, stale) : err;
  }
  return checkOpened(plan, started);
}

function checkOpened(plan: RunPlan, started: StartedRun): Opened {
  const { id } = plan;
  if (!started.claimHeld) throw new LostClaimError(`The claim on intent ${id} is no longer held; the run did not start.`, { intentId: id });
  if (started.claimedBy !== null) {
    throw new LockTimeoutError(`The pipeline of intent ${id} is already running: worker ${started.claimedBy} holds its claim (NOWAIT).`, { intentIds: [id], nowait: true, holders: [] });
  }
  if (started.intentStatus === null) throw new NotFoundError(`Intent ${id}`, { id });
  if (!started.runId) {
    throw new InvalidTransitionError(
      `Intent ${id} is ${started.intentStatus} and cannot enter the pipeline.${started.intentStatus === 'FAILED' ? ' Retry it first (FAILED → RECEIVED).' : ' COMPLETED is terminal.'}`,
      { intentId: id, from: started.intentStatus },
    );
  }
  return { ...started, runId: started.runId, round: started.round! };
}

/** What a bridge sees and may do: the intent as it now is, and the engine's commands at that version, fenced. */
function bridgeContext(plan: RunPlan, opened: Opened, bridge: Bridge, first: PipelineIntent): BridgeContext {
  const { id, actor } = plan;
  const runId = opened.runId;
  let current = first;
  return {
    get intent() {
      return current;
    },
    actor,
    runId,
    mode: plan.mode,
    signal: plan.signal,
    async moveTo(to) {
      await beforeWriting(plan);
      const { intent } = await updateIntentStatus({ id, status: to, expectedVersion: current.version }, actor, withFence(plan));
      current = { id, status: intent.status, version: intent.version, payload: intent.payload };
      return current;
    },
    async correct(diff, reason) {
      await beforeWriting(plan);
      const r = await reevaluateIntent({ id, diff, reason, source: `pipeline:${bridge.name}`, expectedVersion: current.version }, actor, withFence(plan));
      current = { ...current, status: r.status, version: r.version };
      return current;
    },
    async waitFor(spec) {
      await beforeWriting(plan);
      // A worker's question goes on the pool, as its other records do; an operator's through Prisma.
      const step = { intentId: id, round: opened.round, runId, bridge: bridge.name, claimToken: plan.token, actor: actor.name };
      return awaitAnswer(plan.token !== null ? queryOnPool : db(), step, spec, () => new LostClaimError(`The claim on intent ${id} was lost while bridge ${bridge.name} asked for its wait.`, { intentId: id, bridge: bridge.name }));
    },
  };
}

/**
 * `pendingEnd`: the step's end, not written yet because the run closes right after it (the run's close carries it,
 * RunWriter.closeRun): the step's `finishedAt` is then the run's. `waiting`: the bridge stopped to wait for an answer
 * (the run ends `waiting`). `failsIntent`: its failure fails the intent whatever attempts are left (a wait's deadline
 * missed under the rule `fail`).
 */
type BridgeOutcome = { step: PipelineStep; error: string | null; fenced: FencingTokenStaleError | null; pendingEnd: StepEnd | null; waiting?: WaitView; failsIntent?: boolean };

/**
 * One bridge: its step recorded as started, then replayed from its record when this round already completed it (or
 * skipped when the intent's status is not one it accepts), else run and its end recorded. A write refused by the
 * claim's conditions means the claim was lost: the run stops at once.
 */
async function runBridge(plan: RunPlan, opened: Opened, position: number, bridge: Bridge): Promise<BridgeOutcome> {
  const { id, actor, token } = plan;
  const reused = plan.reuse.get(bridge.name);
  const recorded = reused ? (reused.status === 'replayed' ? reused.result : undefined) : opened.recorded[bridge.name];
  // A reused step that was skipped is recorded as skipped again: it accepts no status, so it cannot run.
  const accepts = reused ? [] : bridge.accepts;
  let step =
    position === 0 && plan.opened
      ? plan.opened.firstStep
      : await plan.writer.startStep({ intentId: id, runId: opened.runId, round: opened.round, position, bridge: bridge.name, accepts, replayed: recorded, actor: actor.name, claimToken: token });
  // A first step its claim opened that does not run (skipped, replayed) ends as it starts: recorded at once.
  if (position === 0 && plan.recording.pending && step.stepStatus !== 'running') step = { ...step, stepId: await recordRun(plan) };
  if (step.stepId === null && !(position === 0 && plan.recording.pending)) throw new LostClaimError(`The claim on intent ${id} was lost before bridge ${bridge.name}.`, { intentId: id, bridge: bridge.name });
  announceCommitted();
  if (step.stepStatus !== 'running') {
    const replayed = step.stepStatus === 'replayed' ? { result: recorded } : {};
    return { step: { bridge: bridge.name, status: step.stepStatus!, startedAt: at(step.startedAt), finishedAt: at(step.finishedAt), ...replayed }, error: null, fenced: null, pendingEnd: null };
  }

  const ctx = bridgeContext(plan, opened, bridge, { id, status: step.status, version: step.version, payload: step.payload });
  let result: JsonValue | null = null;
  let error: string | null = null;
  let fenced: FencingTokenStaleError | null = null;
  let waiting: WaitView | undefined;
  let failsIntent = false;
  // A claim's first step that writes nothing for a while has its run recorded meanwhile (an error surfaces below).
  const recordLater = position === 0 && plan.recording.pending ? setTimeout(() => void recordRun(plan).catch(() => undefined), RECORD_RUNNING_AFTER_MS) : undefined;
  try {
    result = ((await bridge.run(ctx)) ?? null) as JsonObject | null;
  } catch (err) {
    if (err instanceof LostClaimError) throw err;
    if (err instanceof WaitSuspended) {
      waiting = err.wait;
      result = { waitingFor: waiting.name, deadline: waiting.deadline };
    } else {
      error = errorText(err);
      if (err instanceof FencingTokenStaleError) fenced = err;
      if (err instanceof WaitDeadlineMissedError || err instanceof FinalBridgeError) failsIntent = err.failsIntent;
    }
  } finally {
    clearTimeout(recordLater);
  }
  const status: StepEnd['status'] = waiting ? 'waiting' : error === null ? 'completed' : 'failed';
  // A first step its claim opened has its id once its run is recorded (by the bridge's first command, or below).
  const stepId = step.stepId ?? (plan.recording.written ? await plan.recording.written : null);
  const end: StepEnd = { intentId: id, runId: opened.runId, stepId, bridge: bridge.name, status, result, error, actor: actor.name, claimToken: token };
  const recordedStep = { bridge: bridge.name, status, startedAt: at(step.startedAt), ...(result !== null ? { result } : {}), ...(error ? { error } : {}) };
  // Without a step id, the run is still not recorded: its close records it whole, with this step.
  if (!waiting && !failsIntent && closesAfter(plan, position, error, fenced)) return { step: { ...recordedStep, finishedAt: null }, error, fenced, pendingEnd: end };
  const finishedAt = await plan.writer.finishStep({ ...end, stepId: stepId ?? (await recordRun(plan)) });
  if (!finishedAt) throw new LostClaimError(`The claim on intent ${id} was lost during bridge ${bridge.name}; its result was not recorded.`, { intentId: id, bridge: bridge.name });
  announceCommitted();
  return { step: { ...recordedStep, finishedAt: at(finishedAt) }, error, fenced, pendingEnd: null, waiting, failsIntent };
}

/**
 * Whether the run closes right after this step with nothing written in between (execute's loop): the last bridge,
 * or a FAILFAST failure that does not fail the intent. A fenced failure writes nothing more for the step's claim
 * but its run's end; a failure that fails the intent marks it FAILED after the step's end is recorded; a step that
 * waits is written on its own (the worker gives its claim back after the run's close instead of ending it).
 */
function closesAfter(plan: RunPlan, position: number, error: string | null, fenced: FencingTokenStaleError | null): boolean {
  if (fenced) return false;
  if (position === plan.bridges.length - 1) return error === null || plan.mode !== 'FAILFAST' || !plan.failIntent;
  return error !== null && plan.mode === 'FAILFAST' && !plan.failIntent;
}

/** FAILFAST's mark on the intent; a refusal of the mark itself is recorded with the run's failures, not thrown. */
async function markFailed(plan: RunPlan, bridge: string, error: string, failures: string[]): Promise<void> {
  await beforeWriting(plan);
  try {
    await updateIntentStatus({ id: plan.id, status: 'FAILED', reason: auditReason(`pipeline: ${bridge} failed: ${error}`) }, plan.actor, withFence(plan));
  } catch (err) {
    failures.push(`marking the intent FAILED: ${errorText(err)}`);
  }
}

async function closeRun(plan: RunPlan, opened: Opened, status: Outcome, failures: string[], steps: PipelineStep[], pendingEnd: StepEnd | null, wait?: WaitView): Promise<PipelineResult> {
  const { id, actor } = plan;
  const runError = failures.length ? failures.join('; ') : null;
  // A run its claim opened and nothing recorded yet is recorded whole by its close (`opening`); one recorded meanwhile
  // gives its first step's id to a step end that was waiting for it.
  if (plan.recording.written) {
    const firstStepId = await plan.recording.written;
    if (pendingEnd && pendingEnd.stepId === null) pendingEnd = { ...pendingEnd, stepId: firstStepId };
  }
  const opening = plan.recording.pending ?? undefined;
  const finished = await plan.writer.closeRun({ intentId: id, runId: opened.runId, status, error: runError, actor: actor.name, claimToken: plan.token, stepEnd: pendingEnd, opening });
  if (!finished) throw new LostClaimError(`The claim on intent ${id} was lost before its run could be closed.`, { intentId: id });
  plan.recording.pending = null;
  announceCommitted();
  // The last step's end went with the run's, in the same statement: the same moment.
  if (pendingEnd) steps[steps.length - 1] = { ...steps[steps.length - 1], finishedAt: finished.finishedAt.toISOString() };
  const run: PipelineRun = {
    id: opened.runId,
    intentId: id,
    round: opened.round,
    mode: plan.mode,
    status,
    door: plan.door,
    actor: actor.name,
    startedAt: opened.startedAt!.toISOString(),
    finishedAt: finished.finishedAt.toISOString(),
    ...(runError ? { error: runError } : {}),
    steps,
  };
  return { intent: finished.intent, run, ...(wait ? { wait } : {}) };
}

export async function runPipeline(input: RunPipelineInput, actor: Actor, options: RunPipelineOptions = {}): Promise<PipelineResult> {
  const plan = planRun(input, actor, options);
  // A worker's claim is its execution lock; an operator's run takes the lock for its length.
  return plan.token !== null ? execute(plan) : withPipelineLock(plan.id, () => execute(plan), actor.name);
}

/** The pipeline for a caller that already holds the intent's execution lock (a rerun, which prepares the intent under it first). */
export async function runPipelineUnderLock(input: RunPipelineInput, actor: Actor, options: RunPipelineOptions = {}): Promise<PipelineResult> {
  return execute(planRun(input, actor, options));
}

async function execute(plan: RunPlan): Promise<PipelineResult> {
  const { actor } = plan;
  const opened = await openRun(plan);
  const steps: PipelineStep[] = [];
  const failures: string[] = [];
  let status: Outcome = 'succeeded';
  let pendingEnd: StepEnd | null = null;
  let wait: WaitView | undefined;
  for (const [position, bridge] of plan.bridges.entries()) {
    // A first step opened with the claim has started already: it runs.
    if (plan.signal.aborted && !(position === 0 && plan.opened)) {
      status = 'interrupted';
      break;
    }
    const outcome = await runBridge(plan, opened, position, bridge);
    const { step, error, fenced, waiting, failsIntent } = outcome;
    pendingEnd = outcome.pendingEnd;
    steps.push(step);
    if (waiting) {
      // Suspended: the bridges after it run once the wait is decided, in a later run of this round.
      status = 'waiting';
      wait = waiting;
      break;
    }
    if (error === null) continue;
    failures.push(`${bridge.name}: ${error}`);
    if (fenced) {
      // The lease (or claim) this run was fenced by has passed to someone else: nothing more may be written for
      // it, not even the FAILED mark. The run is closed as failed and the refusal is the answer.
      await beforeWriting(plan);
      const closed = await plan.writer.finishRun({ intentId: plan.id, runId: opened.runId, status: 'failed', error: failures.join('; '), actor: actor.name, claimToken: plan.token });
      if (closed) announceCommitted();
      throw refusal(plan, fenced);
    }
    if (plan.mode === 'FAILFAST' || failsIntent) {
      status = 'failed';
      if (plan.failIntent || failsIntent) await markFailed(plan, bridge.name, error, failures);
      break;
    }
    status = 'finished_with_errors';
  }
  const result = await closeRun(plan, opened, status, failures, steps, pendingEnd, wait);
  // An operator's run that stopped to wait hands the intent to the workers: once the wait is decided, one of them
  // resumes it (a worker's own run gives its claim back instead: lib/workers/worker.ts).
  if (wait && plan.token === null) await parkRun(db(), { intentId: plan.id, round: opened.round });
  return result;
}

/** An intent's pipeline runs, newest first, with their steps. */
export async function listPipelineRuns(idInput: string, limit = 20): Promise<PipelineRunRecord[]> {
  const id = parseInput(intentIdSchema, idInput, 'id').toLowerCase();
  const runs = await selectRuns(db(), id, limit);
  // No runs: say whether the intent exists at all (getIntent answers 404 when it does not).
  if (runs.length === 0) await getIntent(id);
  return runs;
}

/**
 * An operator's retry of a FAILED intent: FAILED → RECEIVED through the engine (at `expectedVersion` when given,
 * which starts the intent's next round), then the pipeline.
 */
export async function retryPipeline(input: RetryPipelineInput, actor: Actor, options: RunPipelineOptions = {}): Promise<PipelineResult> {
  const { mode, fencing, expectedVersion, ...parsed } = parseInput(retryPipelineInputSchema, input);
  const id = parsed.id.toLowerCase();
  const current = await getIntent(id);
  if (current.status !== 'FAILED') {
    throw new InvalidTransitionError(`Intent ${id} is ${current.status}: only a FAILED intent is retried.`, { intentId: id, from: current.status });
  }
  await updateIntentStatus({ id, status: 'RECEIVED', expectedVersion: expectedVersion ?? current.version, ...(fencing ? { fencing } : {}) }, actor);
  return runPipeline({ id, mode, ...(fencing ? { fencing } : {}) }, actor, options);
}
