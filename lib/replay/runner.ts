import { cpus, hostname } from 'node:os';
import { z } from 'zod';
import { databaseUrl } from '@/lib/db/client';
import { concurrencySettings, env, LOCK_STRATEGIES, type ConcurrencySettings, type LockStrategy } from '@/lib/env';
import { requirePermission } from '@/lib/auth/errors';
import type { AuthActor } from '@/lib/auth/types';
import { asReplayWork } from '@/lib/intents/outcomes';
import { parseInput } from '@/lib/shared/validation';
import type { Actor } from '@/lib/shared/intent-types';
import { ReplayCancelledError, ReplayDisabledError, ReplayNotRunningError } from './errors';
import { NotFoundError } from '@/lib/shared/errors';
import { serverSettings } from './queries';
import { abandonStaleRuns, finishRun, getRun, insertRun, requestCancel, saveProgress, settleDeadlockCounter } from './runs';
import { runScenario, type ScenarioContext } from './scenarios';
import { resolveTargets } from './targets';
import { SCENARIO_NAMES, SIZES, STRATEGY_FLAGS, type ReplayRunView, type StrategyFlag, type RunConfig, type RunDoor, type RunProgress, type ScenarioName, type ScenarioResult, type Sizes } from './types';
import { runVerdict } from './verdict';

/**
 * Starting, running, cancelling and reading replay runs. A run executes in the process that started it (the console's
 * server for the page's button, the CLI's own process otherwise) and coordinates through Postgres only: the run row
 * is its lock, its progress report, its heartbeat and its cancel switch.
 */

const sizeKeys = Object.keys(SIZES.full) as (keyof Sizes)[];
const sizesSchema = z.object(Object.fromEntries(sizeKeys.map((k) => [k, z.number().int().min(1).max(100_000).optional()])) as Record<keyof Sizes, z.ZodOptional<z.ZodNumber>>).strict();

export const startReplaySchema = z.object({
  scenarios: z.union([z.literal('all'), z.array(z.enum(SCENARIO_NAMES, { error: `must be one of ${SCENARIO_NAMES.join(', ')}` })).min(1, { error: 'pick at least one scenario' })]).default('all'),
  size: z.enum(['full', 'small'], { error: 'must be full or small' }).default('full'),
  /** Per-size overrides (e.g. the bench's three throughput rounds). */
  sizes: sizesSchema.optional(),
  /** Target overrides on top of REPLAY_TARGETS and the default targets. */
  targets: z.record(z.string(), z.unknown()).optional(),
  /**
   * Lock strategies for this run's own calls instead of the configured ones, to compare strategies run against run
   * without redeploying (the console's other traffic keeps the configured ones).
   */
  strategies: z
    .object(Object.fromEntries(STRATEGY_FLAGS.map((f) => [f, z.enum(LOCK_STRATEGIES, { error: `must be one of ${LOCK_STRATEGIES.join(', ')}` }).optional()])) as Record<StrategyFlag, z.ZodOptional<z.ZodEnum<{ [S in LockStrategy]: S }>>>)
    .strict()
    .optional(),
});
export type StartReplayInput = z.input<typeof startReplaySchema>;

/** The guard of every door: the replay writes intents and drives lock contention on purpose, so never in production. */
export function replayAllowed(environment: string = env().BRIDGE_ENV): { allowed: boolean; reason: string | null } {
  if (environment === 'staging' || environment === 'development') return { allowed: true, reason: null };
  return { allowed: false, reason: new ReplayDisabledError(environment).message };
}

const pickStrategies = (all: ConcurrencySettings['strategies']) => Object.fromEntries(STRATEGY_FLAGS.map((f) => [f, all[f]])) as ScenarioContext['strategies'];

async function runConfig(sizes: Sizes, sizePreset: RunConfig['sizePreset'], targets: RunConfig['targets'], overrides: RunConfig['strategyOverrides'] = {}): Promise<RunConfig> {
  const server = await serverSettings().catch(() => null);
  const settings = concurrencySettings();
  // Only what differs from the configuration is an override: choosing the configured strategy changes nothing.
  const strategyOverrides = Object.fromEntries(Object.entries(overrides).filter(([flag, s]) => s && settings.strategies[flag as StrategyFlag] !== s));
  return {
    settings: { ...settings, strategies: { ...settings.strategies, ...strategyOverrides } },
    strategyOverrides,
    sizes,
    sizePreset,
    targets,
    runtime: { node: process.version, postgres: server?.version ?? null, host: hostname(), cpus: cpus().length, serverSettings: server?.settings ?? {} },
  };
}

/** Checks the guard, claims the one running slot, and records who, where and with which settings. Does not run it. */
export async function startReplay(input: StartReplayInput, door: RunDoor, actor: Actor, options: { environment?: string } = {}): Promise<ReplayRunView> {
  const environment = options.environment ?? env().BRIDGE_ENV;
  if (!replayAllowed(environment).allowed) throw new ReplayDisabledError(environment);
  const parsed = parseInput(startReplaySchema, input);
  const scenarios: ScenarioName[] = parsed.scenarios === 'all' ? [...SCENARIO_NAMES] : [...new Set(parsed.scenarios)];
  const sizes: Sizes = { ...SIZES[parsed.size], ...(parsed.sizes as Partial<Sizes> | undefined) };
  const targets = resolveTargets(env().REPLAY_TARGETS, parsed.targets);
  const config = await runConfig(sizes, parsed.sizes && Object.keys(parsed.sizes).length ? 'custom' : parsed.size, targets, parsed.strategies);
  await abandonStaleRuns();
  return insertRun({
    door,
    requestedBy: actor.name,
    environment,
    scenarios,
    config,
    progress: { done: 0, total: scenarios.length, current: null, fraction: 0, note: 'starting' },
    runner: `${hostname()}:${process.pid}`,
  });
}

export type ProgressListener = (progress: RunProgress, results: readonly ScenarioResult[]) => void;

const PROGRESS_WRITE_MS = 300;
const HEARTBEAT_MS = 5_000;

/**
 * Runs a started run to its end and records the outcome. Never throws: a broken run is recorded as failed with its
 * error, a cancelled one as cancelled with what it finished.
 */
export async function executeReplay(run: ReplayRunView, options: { onProgress?: ProgressListener } = {}): Promise<ReplayRunView> {
  const results: ScenarioResult[] = [];
  let progress: RunProgress = run.progress;
  let cancelledBy: string | null | undefined;
  let lastWrite = 0;
  let writing: Promise<void> = Promise.resolve();

  // Writes are chained (never two at once) and throttled; each one is also the heartbeat and reads the cancel flag.
  const write = (force: boolean): Promise<void> => {
    if (!force && Date.now() - lastWrite < PROGRESS_WRITE_MS) return writing;
    lastWrite = Date.now();
    const snapshot = { ...progress };
    const done = [...results];
    writing = writing
      .then(() => saveProgress(run.id, snapshot, done))
      .then((flag) => {
        if (flag.cancelRequested && cancelledBy === undefined) cancelledBy = flag.cancelledBy;
      })
      .catch((err: unknown) => console.error(`[replay] could not record the progress of run ${run.id}:`, err));
    return writing;
  };
  const heartbeat = setInterval(() => void write(true), HEARTBEAT_MS);
  heartbeat.unref?.();

  const settings = concurrencySettings();
  const ctx: ScenarioContext = {
    runId: run.id,
    actor: { name: `replay:${run.requestedBy}`.slice(0, 255) },
    sizes: run.config.sizes,
    targets: run.config.targets,
    databaseUrl: databaseUrl(),
    poolSize: settings.poolSize,
    lockTimeoutMs: settings.lockTimeoutMs,
    preparedStatements: settings.preparedStatements,
    // The strategies the run recorded (its own choice already applied), not the configuration as it is now.
    strategies: pickStrategies((run.config.settings as Pick<ConcurrencySettings, 'strategies'>).strategies),
    progress: (fraction, note) => {
      progress = { ...progress, fraction: Math.max(0, Math.min(1, fraction)), note };
      options.onProgress?.(progress, results);
      void write(false);
    },
    checkCancelled: async () => {
      await write(false);
      if (cancelledBy !== undefined) throw new ReplayCancelledError(cancelledBy);
    },
  };

  let status: 'finished' | 'cancelled' | 'failed' = 'finished';
  let error: string | null = null;
  try {
    for (const [i, name] of run.scenarios.entries()) {
      await ctx.checkCancelled();
      progress = { done: i, total: run.scenarios.length, current: name, fraction: 0, note: 'setting up' };
      options.onProgress?.(progress, results);
      await write(true);
      results.push(await asReplayWork(() => runScenario(name, ctx)));
      progress = { ...progress, done: i + 1, fraction: 1, note: 'done' };
      options.onProgress?.(progress, results);
      await write(true);
    }
    progress = { ...progress, current: null, note: 'finished' };
  } catch (err) {
    if (err instanceof ReplayCancelledError) {
      status = 'cancelled';
      error = err.message;
      progress = { ...progress, note: err.message };
    } else {
      status = 'failed';
      error = err instanceof Error ? err.message : String(err);
      console.error(`[replay] run ${run.id} failed:`, err);
    }
  } finally {
    clearInterval(heartbeat);
    await writing;
  }
  const verdict = status === 'finished' ? runVerdict(results) : null;
  // The end snapshot of Postgres' deadlock counter must include the deadlocks this run provoked (see runs.ts).
  const seen = results.reduce((n, r) => n + (r.outcomes?.deadlocks ?? 0), 0);
  await settleDeadlockCounter(run.id, seen).catch((err: unknown) => console.error(`[replay] could not read Postgres' deadlock counter for run ${run.id}:`, err));
  return finishRun(run.id, { status, verdict, progress, results, error });
}

/** Start and run to the end in this process (the CLI and the bench). */
export async function runReplay(input: StartReplayInput, door: RunDoor, actor: Actor, options: { environment?: string; onProgress?: ProgressListener } = {}) {
  const run = await startReplay(input, door, actor, options);
  return executeReplay(run, options);
}

/** The console's button or the API: start, then run in the background of this server process; the page polls the run row. */
export async function startReplayInBackground(input: StartReplayInput, door: 'console' | 'api', actor: Actor): Promise<ReplayRunView> {
  const run = await startReplay(input, door, actor);
  void executeReplay(run).catch((err: unknown) => console.error(`[replay] run ${run.id} could not be recorded:`, err));
  return run;
}

/**
 * What a person may choose when starting a run from the console or the API: scenarios, size and strategies. Sizes
 * and targets are the CLI's and the bench's (a run judged against relaxed targets is not a go/no-go).
 */
export const consoleReplaySchema = startReplaySchema.pick({ scenarios: true, size: true, strategies: true }).strict();
export type ConsoleReplayInput = z.input<typeof consoleReplaySchema>;

/**
 * The Replay page's button and `POST /api/replay/runs`: needs `replay.run` (the release and admin roles), then the
 * environment guard, then one run at a time; the run goes on in the background of this server process.
 */
export async function startReplayForUser(actor: AuthActor, input: unknown, door: 'console' | 'api'): Promise<ReplayRunView> {
  requirePermission(actor, 'replay.run');
  return startReplayInBackground(parseInput(consoleReplaySchema, input), door, { name: actor.name });
}

/** Cancel from the page or the API: needs `replay.run`, like starting. */
export async function cancelReplayForUser(actor: AuthActor, id: unknown): Promise<{ runId: string }> {
  requirePermission(actor, 'replay.run');
  const runId = parseInput(z.uuid({ error: 'must be a UUID' }), id, 'runId');
  await cancelReplay(runId, { name: actor.name });
  return { runId };
}

export async function cancelReplay(id: string, actor: Actor): Promise<void> {
  const runId = parseInput(z.uuid({ error: 'must be a UUID' }), id, 'runId');
  if (await requestCancel(runId, actor.name)) return;
  const run = await getRun(runId);
  if (!run) throw new NotFoundError(`Replay run ${runId}`, { runId });
  throw new ReplayNotRunningError(`Replay run ${runId} is not running: it is ${run.status}.`, { runId, status: run.status });
}
