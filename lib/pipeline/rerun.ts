import { z } from 'zod';
import { db, type Tx } from '@/lib/db/client';
import { updateIntentStatus } from '@/lib/intents/commands';
import { InvalidTransitionError, LockTimeoutError, VersionConflictError } from '@/lib/intents/errors';
import { updateStatusSchema } from '@/lib/intents/schemas';
import { SUBJECTS } from '@/lib/events/subjects';
import { NotFoundError, ValidationError } from '@/lib/shared/errors';
import { intentIdSchema } from '@/lib/shared/fields';
import { TRANSITIONS, type IntentStatus } from '@/lib/shared/intent-states';
import type { Actor } from '@/lib/shared/intent-types';
import type { JsonObject, JsonValue } from '@/lib/shared/json';
import { storable, STORABLE_MESSAGE } from '@/lib/shared/text';
import { parseInput } from '@/lib/shared/validation';
import { resolveBridgeSet } from './bridges';
import { RerunRefusedError } from './errors';
import { withPipelineLock } from './lock';
import { selectRerunBase, type RerunBase } from './rerun-queries';
import { auditReason, runPipeline, runPipelineSchema, runPipelineUnderLock, type ReusedStep } from './run';
import { PIPELINE_MODES, type Bridge, type PipelineDoor, type PipelineResult, type StepStatus } from './types';

/**
 * Rerun from a step: an operator picks the bridge a FAILED or stuck intent starts again from. The steps before it
 * are reused from the intent's latest run (their recorded results, not run again), the intent is brought back to the
 * status that bridge started at in that run, and the bridges from it on run as a new round, audited with the
 * operator's reason.
 *
 * One function makes the plan (planRerun) and the execution runs exactly that plan, made again under the intent's
 * execution lock: what the console and the API show is what runs, unless the intent changed in between — and then
 * `expectedVersion` (the version the plan was made at) refuses the rerun with 409 `version_conflict`.
 *
 * How the status gets back: the state machine's only way into a new round is FAILED → RECEIVED, so a stuck intent is
 * marked FAILED first, and from RECEIVED the intent is moved forward through the engine's status command to the
 * status the chosen bridge started at (RECEIVED → NORMALIZED for `normalize`), each move audited with the reason.
 * The payload is left as it is now: corrections made by earlier rounds (or by the operator before the rerun) stay.
 */

const bridgeNameSchema = z.string({ error: 'must be a bridge name' }).trim().min(1, { error: 'is required: the bridge to start from' }).max(64, { error: 'must be at most 64 characters' });
/** Why the operator reruns: required, kept in the audit of the run and of every status move it makes. */
const rerunReasonSchema = z
  .string({ error: 'is required: say why the intent is rerun' })
  .trim()
  .min(1, { error: 'is required: say why the intent is rerun' })
  .max(400, { error: 'must be at most 400 characters' })
  .refine(storable, { error: STORABLE_MESSAGE });

export const rerunPlanQuerySchema = z.strictObject({ fromBridge: bridgeNameSchema });
export const rerunPlanInputSchema = rerunPlanQuerySchema.extend({ id: intentIdSchema });
export type RerunPlanInput = z.input<typeof rerunPlanInputSchema>;

export const rerunFieldsSchema = z.strictObject({
  fromBridge: bridgeNameSchema,
  reason: rerunReasonSchema,
  mode: z.enum(PIPELINE_MODES, { error: `must be one of ${PIPELINE_MODES.join(', ')}` }).optional(),
  /** The intent's version when the plan was shown: the rerun is refused (409) if it moved since. */
  expectedVersion: updateStatusSchema.shape.expectedVersion,
});
export const rerunInputSchema = rerunFieldsSchema.extend({ id: intentIdSchema });
export type RerunInput = z.input<typeof rerunInputSchema>;

export type RerunStepPlan = {
  position: number;
  bridge: string;
  description: string;
  /** reuse: taken from the latest run, not run; run: runs again in the new round. */
  action: 'reuse' | 'run';
  /** A reused step's record in the latest run. */
  recorded: { status: StepStatus; result?: JsonValue } | null;
  /** What a step that runs may change; null when the bridge declares nothing (then anything the engine allows). */
  mayChange: { moves: [IntentStatus, IntentStatus][]; correction: string | null; events: string[] } | null;
};

export type RerunPlan = {
  intentId: string;
  fromBridge: string;
  /** The intent as the plan saw it: the rerun runs on this payload. */
  intent: { status: IntentStatus; version: number; payload: JsonObject };
  /** The run whose recorded steps are reused. */
  basedOn: { runId: string; round: number; status: string; startedAt: string } | null;
  /** The round the rerun runs as. */
  round: number;
  /** Status moves made before the first bridge runs (each audited with the reason and sent out as an event). */
  moves: [IntentStatus, IntentStatus][];
  steps: RerunStepPlan[];
};

const eventsOf = (moves: readonly (readonly [IntentStatus, IntentStatus])[], correction: string | null) => [
  ...(moves.length ? [SUBJECTS.statusChanged] : []),
  ...(correction ? [SUBJECTS.corrected] : []),
];

/** The shortest way from RECEIVED to `to` through the processing statuses (never through FAILED or COMPLETED). */
function forwardPath(to: IntentStatus): [IntentStatus, IntentStatus][] | null {
  const before = new Map<IntentStatus, IntentStatus>();
  const queue: IntentStatus[] = ['RECEIVED'];
  while (queue.length && !before.has(to) && to !== 'RECEIVED') {
    const at = queue.shift()!;
    for (const next of TRANSITIONS[at]) {
      if (next === 'FAILED' || next === 'COMPLETED' || next === 'RECEIVED' || before.has(next)) continue;
      before.set(next, at);
      queue.push(next);
    }
  }
  const path: [IntentStatus, IntentStatus][] = [];
  for (let at = to; at !== 'RECEIVED'; ) {
    const from = before.get(at);
    if (!from) return null;
    path.unshift([from, at]);
    at = from;
  }
  return path;
}

/**
 * Refuses an intent a worker holds (423, as any second execution: the claim is the worker's execution lock), and one
 * that is neither FAILED nor stuck: COMPLETED, or queued for a worker.
 */
function checkEligible(id: string, base: RerunBase): void {
  if (base.claimedBy !== null) {
    throw new LockTimeoutError(`The pipeline of intent ${id} is already running: worker ${base.claimedBy} holds its claim (NOWAIT).`, { intentIds: [id], nowait: true, holders: [] });
  }
  // A replay's intents never enter the work queue, so their runs have no rounds to start anew.
  if (base.isReplay) throw new InvalidTransitionError(`Intent ${id} was made by a contention replay: its pipeline is not rerun.`, { intentId: id, isReplay: true });
  if (base.status === 'COMPLETED') throw new InvalidTransitionError(`Intent ${id} is COMPLETED: a completed intent is not rerun.`, { intentId: id, from: base.status });
  // A bridge waiting for an answer is not stuck either: it resumes once the answer (or its deadline) comes.
  if (base.status !== 'FAILED' && base.workState === 'waiting') {
    throw new InvalidTransitionError(
      `Intent ${id} is ${base.status} and waits for an answer to one of its bridges: it resumes when the answer or the wait's deadline comes. Answer the wait, or fail the intent to rerun it from a step.`,
      { intentId: id, from: base.status, workState: base.workState },
    );
  }
  if (base.status !== 'FAILED' && (base.workState === 'available' || base.workState === 'retryable')) {
    throw new InvalidTransitionError(`Intent ${id} is ${base.status} and queued for a worker: only a FAILED or stuck intent is rerun from a step.`, { intentId: id, from: base.status, workState: base.workState });
  }
}

/** A step before the chosen bridge, taken from the latest run; refused when that run did not finish it. */
function reusedStep(id: string, base: RerunBase, bridge: Bridge, fromBridge: string): RerunStepPlan['recorded'] {
  const step = base.steps.findLast((s) => s.bridge === bridge.name);
  if (step && (step.status === 'completed' || step.status === 'replayed' || step.status === 'skipped')) {
    return { status: step.status, ...(step.status !== 'skipped' ? { result: step.result } : {}) };
  }
  const where = base.latestRun ? `its latest run (round ${base.latestRun.round}) ${step ? `recorded it ${step.status}` : 'did not reach it'}` : 'the pipeline has not run on it';
  throw new RerunRefusedError(`Intent ${id} cannot be rerun from ${fromBridge}: bridge ${bridge.name} comes before it and ${where}. Rerun from ${bridge.name} or an earlier bridge.`, {
    field: 'fromBridge',
    intentId: id,
    bridge: bridge.name,
  });
}

function stepPlans(id: string, base: RerunBase, bridges: Bridge[], from: number): RerunStepPlan[] {
  return bridges.map((bridge, position) => {
    const reuse = position < from;
    return {
      position,
      bridge: bridge.name,
      description: bridge.description,
      action: reuse ? 'reuse' : 'run',
      recorded: reuse ? reusedStep(id, base, bridge, bridges[from].name) : null,
      mayChange:
        reuse || !bridge.effects ? null : { moves: bridge.effects.moves.map(([a, b]) => [a, b]), correction: bridge.effects.correction, events: eventsOf(bridge.effects.moves, bridge.effects.correction) },
    };
  });
}

/** Where the chosen bridge starts: RECEIVED for the first, else the status it started at in the latest run's round. */
function startStatus(id: string, base: RerunBase, bridges: Bridge[], from: number): IntentStatus {
  if (from === 0) return 'RECEIVED';
  if (base.fromStatus && forwardPath(base.fromStatus)) return base.fromStatus;
  throw new RerunRefusedError(
    `Intent ${id} cannot be rerun from ${bridges[from].name}: it did not start in the latest run's round ${base.latestRun?.round ?? ''}, so the status it starts at is not known. Rerun from an earlier bridge.`,
    { field: 'fromBridge', intentId: id, bridge: bridges[from].name },
  );
}

/**
 * The plan of a rerun of intent `id` from `fromBridge`: which recorded steps are reused, which bridges run again and
 * what each may change, the status moves before the run, the round. The execution calls this same function under
 * the execution lock. 400 naming `fromBridge` for a bridge not in the BridgeSet; 404 for an unknown intent; 409
 * `invalid_transition` for an intent that is not FAILED or stuck, `rerun_refused` when the latest run did not finish
 * a step that would be reused.
 */
export async function planRerun(input: RerunPlanInput | Record<string, unknown>, options: { bridges?: readonly string[]; client?: Tx } = {}): Promise<RerunPlan> {
  const parsed = parseInput(rerunPlanInputSchema, input);
  const id = parsed.id.toLowerCase();
  const bridges = resolveBridgeSet(options.bridges);
  const from = bridges.findIndex((b) => b.name === parsed.fromBridge);
  if (from < 0) throw new ValidationError([{ field: 'fromBridge', message: `must be a bridge of the BridgeSet: ${bridges.map((b) => b.name).join(', ')}` }]);
  const base = await selectRerunBase(options.client ?? db(), id, parsed.fromBridge);
  if (!base) throw new NotFoundError(`Intent ${id}`, { id });
  checkEligible(id, base);
  const steps = stepPlans(id, base, bridges, from);
  const moves: [IntentStatus, IntentStatus][] = [...(base.status !== 'FAILED' ? [[base.status, 'FAILED'] as [IntentStatus, IntentStatus]] : []), ['FAILED', 'RECEIVED'], ...forwardPath(startStatus(id, base, bridges, from))!];
  return {
    intentId: id,
    fromBridge: parsed.fromBridge,
    intent: { status: base.status, version: base.version, payload: base.payload },
    basedOn: base.latestRun ? { runId: base.latestRun.id, round: base.latestRun.round, status: base.latestRun.status, startedAt: base.latestRun.startedAt.toISOString() } : null,
    // FAILED → RECEIVED starts the next round: the work row's next, or for an intent without one, the one after its runs'.
    round: (base.workRound ?? base.latestRun?.round ?? 0) + 1,
    moves,
    steps,
  };
}

export type RerunResult = PipelineResult & { plan: RerunPlan };

function reuseOf(plan: RerunPlan): Map<string, ReusedStep> {
  const reuse = new Map<string, ReusedStep>();
  for (const s of plan.steps) {
    if (s.action !== 'reuse' || !s.recorded) continue;
    reuse.set(s.bridge, s.recorded.status === 'skipped' ? { status: 'skipped' } : { status: 'replayed', result: s.recorded.result ?? null });
  }
  return reuse;
}

/**
 * Reruns intent `id` from `fromBridge` as a new round, with the operator's reason: under the execution lock (423 at
 * once while another execution holds it), the plan is made, the intent moved to the status its first rerun bridge
 * starts at, and the pipeline run with the plan's reused steps recorded as replayed. Answers the run and the plan.
 */
export async function rerunPipeline(input: RerunInput, actor: Actor, options: { door?: PipelineDoor; bridges?: readonly string[] } = {}): Promise<RerunResult> {
  const { id: rawId, fromBridge, reason, mode, expectedVersion } = parseInput(rerunInputSchema, input);
  const id = rawId.toLowerCase();
  return withPipelineLock(
    id,
    async () => {
      const plan = await planRerun({ id, fromBridge }, { bridges: options.bridges });
      if (expectedVersion !== undefined && expectedVersion !== plan.intent.version) throw new VersionConflictError(id, expectedVersion, plan.intent.version);
      const why = auditReason(`rerun from ${fromBridge}: ${reason}`);
      let version = plan.intent.version;
      for (const [, to] of plan.moves) {
        const moved = await updateIntentStatus({ id, status: to, expectedVersion: version, reason: why }, actor);
        version = moved.intent.version;
      }
      const reused = plan.steps.filter((s) => s.action === 'reuse').map((s) => s.bridge);
      const details: JsonObject = { reason, rerun: { fromBridge, reused, basedOnRun: plan.basedOn?.runId ?? null } };
      const result = await runPipelineUnderLock({ id, mode }, actor, { door: options.door ?? 'api', bridges: options.bridges, reuse: reuseOf(plan), startDetails: details });
      return { ...result, plan };
    },
    actor.name,
  );
}

/**
 * The body of POST /api/intents/:id/pipeline: a run (`mode`, `fencing`), or with `fromBridge` a rerun from that
 * bridge, which needs a `reason` and may carry the `expectedVersion` its plan was made at.
 */
const pipelineRequestShape = runPipelineSchema.extend({
  fromBridge: bridgeNameSchema.optional(),
  reason: z.string({ error: 'must be a string' }).optional(),
  expectedVersion: updateStatusSchema.shape.expectedVersion,
});

function checkPipelineRequest(body: z.output<typeof pipelineRequestShape>, ctx: z.RefinementCtx): void {
  if (body.fromBridge === undefined) {
    for (const field of ['reason', 'expectedVersion'] as const) {
      if (body[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'is only taken with fromBridge (a rerun from a step)' });
    }
    return;
  }
  if (body.fencing) ctx.addIssue({ code: 'custom', path: ['fencing'], message: 'is not taken with fromBridge: a rerun runs under the execution lock' });
  const reason = rerunReasonSchema.safeParse(body.reason);
  if (!reason.success) ctx.addIssue({ code: 'custom', path: ['reason'], message: reason.error.issues[0].message });
}

export const pipelineRequestSchema = pipelineRequestShape.superRefine(checkPipelineRequest);
export const pipelineRequestInputSchema = pipelineRequestShape.extend({ id: intentIdSchema }).superRefine(checkPipelineRequest);
export type PipelineRequestInput = z.input<typeof pipelineRequestInputSchema>;

/** The API's one door into the pipeline: a run, or a rerun from a step when the body names `fromBridge`. */
export async function runOrRerunPipeline(input: PipelineRequestInput, actor: Actor, options: { door: PipelineDoor }): Promise<PipelineResult | RerunResult> {
  const { id, fromBridge, reason, expectedVersion, mode, fencing } = parseInput(pipelineRequestInputSchema, input);
  if (fromBridge === undefined) return runPipeline({ id, mode, fencing }, actor, options);
  return rerunPipeline({ id, fromBridge, reason: reason ?? '', mode, expectedVersion }, actor, options);
}
