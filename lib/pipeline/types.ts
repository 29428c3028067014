import type { IntentStatus } from '@/lib/shared/intent-states';
import type { JsonObject, JsonValue } from '@/lib/shared/json';
import type { Actor, Intent } from '@/lib/shared/intent-types';
import type { WaitAnswer, WaitSpec, WaitView } from './waits';

export const PIPELINE_MODES = ['FAILFAST', 'CONTINUE'] as const;
/** FAILFAST: the first failing bridge fails the intent and stops the run. CONTINUE: record the failure, go on. */
export type PipelineMode = (typeof PIPELINE_MODES)[number];

/** Where a run came from: the JSON API, a console action, or a worker's claim. */
export type PipelineDoor = 'api' | 'console' | 'worker';

/**
 * How workers run the pipeline: FAILFAST, through their own door, as `worker:<the worker's name>` (the name their
 * claims carry in intent_work.claimed_by). The console reads a worker's run that is not recorded yet from its claim.
 */
export const WORKER_RUNS = { mode: 'FAILFAST', door: 'worker', actorPrefix: 'worker:' } as const satisfies { mode: PipelineMode; door: PipelineDoor; actorPrefix: string };

/** `waiting`: the run stopped at a bridge that waits for an answer from outside (waits.ts); a later run resumes there. */
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'finished_with_errors' | 'interrupted' | 'waiting' | 'abandoned' | 'released';
export type StepStatus = 'running' | 'completed' | 'failed' | 'skipped' | 'replayed' | 'waiting' | 'abandoned' | 'released';

/** What a bridge sees of the intent when its step starts. */
export type PipelineIntent = Pick<Intent, 'id' | 'status' | 'version' | 'payload'>;

export type BridgeContext = {
  /** The intent as it was when this step started; kept current by moveTo and correct. */
  readonly intent: PipelineIntent;
  readonly actor: Actor;
  readonly runId: string;
  readonly mode: PipelineMode;
  /** Aborted when the worker is stopping: a long bridge may stop early (it then fails and is retried). */
  readonly signal: AbortSignal;
  /** Moves the intent to `status` through the engine's status command, at the version this step has seen. */
  moveTo(status: IntentStatus): Promise<PipelineIntent>;
  /** Applies a correction through the engine's correction command, at the version this step has seen. */
  correct(diff: JsonObject, reason: string): Promise<PipelineIntent>;
  /**
   * Waits for an answer from outside (another service's callback, a person's decision): the decision once there is
   * one — an answer, or the deadline's default under `continue` — else the run suspends here and holds nothing until
   * it is decided (the bridge runs again from its start then, and this call answers). A deadline missed under `fail`
   * or `retry` throws. Deterministic bridges call it before changing anything.
   */
  waitFor(spec: WaitSpec): Promise<WaitAnswer>;
};

/**
 * What a bridge may change when it runs, declared beside its code so the console can say it before a rerun: the
 * status moves it may make (each one audited and sent out as `evt.intent.status_changed`) and the correction it may
 * write (audited, sent out as `evt.intent.corrected`). A bridge that declares nothing is described as able to do
 * anything the engine's commands allow.
 */
export type BridgeEffects = {
  /** `[from, to]` pairs; empty when it never moves the status. */
  moves: readonly (readonly [IntentStatus, IntentStatus])[];
  /** The correction it may write, in words; null when it never corrects. */
  correction: string | null;
};

/**
 * A bridge: one small deterministic step of the pipeline. It runs only when the intent's status is one it
 * `accepts` (otherwise the step is recorded as skipped), changes the intent only through the context's engine
 * commands, and returns a JSON result that is recorded and replayed (not re-run) by a later run of the same round.
 * A failure is any thrown error; BridgeError is for refusals the bridge means (bad payload, say).
 */
export type Bridge = {
  name: string;
  /** Its contract in one sentence, shown in the console. */
  description: string;
  accepts: readonly IntentStatus[];
  /** What it may change; shown in a rerun's plan. */
  effects?: BridgeEffects;
  run(ctx: BridgeContext): Promise<JsonObject | void>;
};

export type PipelineStep = {
  bridge: string;
  status: StepStatus;
  startedAt: string | null;
  finishedAt: string | null;
  result?: JsonValue;
  error?: string;
};

export type PipelineRun = {
  id: string;
  intentId: string;
  round: number;
  mode: PipelineMode;
  status: RunStatus;
  door: PipelineDoor;
  actor: string;
  startedAt: string;
  finishedAt: string | null;
  error?: string;
  steps: PipelineStep[];
};

/** `wait`: what the run stopped to wait for, when it ended `waiting`. */
export type PipelineResult = { intent: Intent; run: PipelineRun; wait?: WaitView };

/**
 * A run as the intent's history reads it: with its attempt within its round (1 for the first; a run resumed after a
 * wait keeps the attempt of the run that stopped to wait). A move back to RECEIVED starts the next round, whose
 * attempts count from 1 again.
 */
export type PipelineRunRecord = PipelineRun & { attempt: number };

/** The status change that made the intent FAILED, as its audit event recorded it. */
export type FailureMark = { at: string; actor: string; from: IntentStatus | null; version: number | null; reason: string | null };

/**
 * A run in the intent's history. One that ended `waiting` keeps that status (it is how the run ended) and carries the
 * wait it stopped at as the wait is now: still waiting, answered, past its deadline, or cancelled because the intent
 * left the round.
 */
export type PipelineHistoryRun = PipelineRunRecord & { wait?: WaitView };

/** An intent's pipeline history: its latest runs, while it is FAILED the change that failed it, and its waits (the open one first). */
export type PipelineHistory = { runs: PipelineHistoryRun[]; failure: FailureMark | null; waits: WaitView[] };
