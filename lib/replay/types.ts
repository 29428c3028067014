import type { LockStrategy } from '@/lib/env';
import type { LatencySummary } from './stats';
import type { Targets } from './targets';

/**
 * The contention replay's vocabulary. A run is a list of scenarios; each scenario creates its own intents (tagged as
 * replay data), drives the engine concurrently, and reports latencies, outcome counts, measures and checks against
 * the targets. These shapes are persisted (replay_runs.results), printed by the CLI and shown by the Replay page, so
 * they are plain JSON.
 */
export const SCENARIO_NAMES = [
  'status-race',
  'corrections-3',
  'corrections-50',
  'identical-transitions',
  'nowait-executions',
  'crossing-deadlock',
  'sorted-bulk',
  'throughput',
  'lock-latency',
] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

export function isScenarioName(value: string): value is ScenarioName {
  return (SCENARIO_NAMES as readonly string[]).includes(value);
}

/** How big each scenario is. `full` is the documented size (docs/REPLAY.md); `small` keeps tests fast while exercising the same code. */
export type Sizes = {
  /** status-race: intents, each raced by two different status updates. */
  statusRaceIntents: number;
  /** corrections-50: concurrent corrections of one intent. */
  manyCorrections: number;
  /** identical-transitions: intents, and identical concurrent transitions per intent. */
  identicalIntents: number;
  identicalCalls: number;
  /** nowait-executions: rounds of two concurrent executions; how long the winner's execution works while it holds the lock. */
  nowaitRounds: number;
  nowaitWorkMs: number;
  /** crossing-deadlock: rounds (one deadlock each). */
  deadlockRounds: number;
  /** sorted-bulk: rounds of `bulkWorkers` concurrent bulk updates over `bulkIntents` intents. */
  bulkRounds: number;
  bulkWorkers: number;
  bulkIntents: number;
  /** throughput: intents per round, how many at a time, rounds (each runs ours and the baseline, alternating order). */
  throughputIntents: number;
  throughputBatch: number;
  throughputRounds: number;
  /** lock-latency: intents locked one after another. */
  lockLatencyIntents: number;
};

export const SIZES: Record<'full' | 'small', Sizes> = {
  full: {
    statusRaceIntents: 20,
    manyCorrections: 50,
    identicalIntents: 5,
    identicalCalls: 20,
    nowaitRounds: 5,
    nowaitWorkMs: 150,
    deadlockRounds: 5,
    bulkRounds: 3,
    bulkWorkers: 10,
    bulkIntents: 5,
    throughputIntents: 1000,
    throughputBatch: 100,
    throughputRounds: 1,
    lockLatencyIntents: 100,
  },
  small: {
    statusRaceIntents: 3,
    manyCorrections: 10,
    identicalIntents: 2,
    identicalCalls: 5,
    nowaitRounds: 2,
    nowaitWorkMs: 100,
    deadlockRounds: 2,
    bulkRounds: 1,
    bulkWorkers: 4,
    bulkIntents: 3,
    throughputIntents: 60,
    throughputBatch: 20,
    throughputRounds: 1,
    lockLatencyIntents: 10,
  },
};

/** What the callers saw, plus what the engine counted while the scenario ran (lib/intents/outcomes observer). */
export type OutcomeCounts = {
  /** Operations the scenario issued. */
  calls: number;
  /** Calls that returned normally (already-applied ones included). */
  succeeded: number;
  /** Calls answered "already applied" (the target was reached by an identical request). */
  alreadyApplied: number;
  /** Version conflicts met on the way (optimistic attempts that found a newer version, stale expectedVersion). */
  conflicts: number;
  /** Retries: after a version conflict, or after being chosen as a deadlock victim. */
  retries: number;
  /** Calls refused because a lock was not available in time (lock_timeout, or NOWAIT). */
  lockTimeouts: number;
  /** Deadlocks Postgres detected (each one, retried or not). */
  deadlocks: number;
  /** Calls that failed, by error code. */
  failed: Record<string, number>;
  /** The first error message seen per failing code, to tell what happened without the logs. */
  failedExamples: Record<string, string>;
  /** The engine's own counts by `operation:outcome`. */
  engine: Record<string, number>;
};

export type Check = {
  id: string;
  label: string;
  /** The target as shown (e.g. "≥ 2000 /s"). */
  target: string;
  /** The measured value as shown. */
  actual: string;
  /** Met or missed; null when the run was too small to judge this target (`notJudged` says why). */
  pass: boolean | null;
  /** Why a target was not judged: the statistic it is set on needs more operations than the run made. */
  notJudged?: string;
};

/**
 * A scenario's or a run's verdict. `smoke`: every check that was judged passed, but the run was too small for some
 * timing targets (a rate, a percentile or a mean over fewer operations than the target is set for), so those
 * figures are shown and not judged.
 */
export type Verdict = 'pass' | 'fail' | 'smoke';

export type ScenarioResult = {
  name: ScenarioName;
  title: string;
  /** Where the scenario comes from (seed section). */
  source: string;
  startedAt: string;
  durationMs: number;
  /** Per-operation latency (ms) of the operations the scenario measures. */
  latency: LatencySummary | null;
  outcomes: OutcomeCounts;
  /** Named figures the checks and run comparisons use (see MEASURES in verdict.ts). */
  measures: Record<string, number>;
  checks: Check[];
  verdict: Verdict;
  notes: string[];
  /** Set when the scenario itself broke (not a missed target). */
  error?: string;
};

export type RunStatus = 'running' | 'finished' | 'cancelled' | 'failed';
/** Where a run was started: the Replay page, the API (`POST /api/replay/runs`), the CLI or the bench. */
export type RunDoor = 'console' | 'api' | 'cli' | 'bench';

export type RunProgress = {
  /** Scenarios finished, of `total`. */
  done: number;
  total: number;
  current: ScenarioName | null;
  /** 0..1 within the current scenario. */
  fraction: number;
  note: string;
};

/** The operations whose lock strategy a run may choose for itself (the others have one strategy only). */
export const STRATEGY_FLAGS = ['update_status', 'reevaluate'] as const;
export type StrategyFlag = (typeof STRATEGY_FLAGS)[number];

/** The settings in force when the run started: the rollout's feature flags, so two strategies compare run against run. */
export type RunConfig = {
  settings: Record<string, unknown>;
  /**
   * Strategies this run used instead of the configured ones (the Replay page's and the bench's strategy choice);
   * `settings.strategies` already has them applied. Absent or empty: the run used the configuration as it is.
   */
  strategyOverrides?: Partial<Record<StrategyFlag, LockStrategy>>;
  sizes: Sizes;
  sizePreset: 'full' | 'small' | 'custom';
  targets: Targets;
  runtime: { node: string; postgres: string | null; host: string; cpus: number; serverSettings: Record<string, string> };
};

export type ReplayRunView = {
  id: string;
  status: RunStatus;
  verdict: Verdict | null;
  door: RunDoor;
  requestedBy: string;
  environment: string;
  scenarios: ScenarioName[];
  config: RunConfig;
  progress: RunProgress;
  results: ScenarioResult[];
  error: string | null;
  cancelRequested: boolean;
  cancelledBy: string | null;
  runner: string;
  createdAt: string;
  heartbeatAt: string;
  finishedAt: string | null;
  /**
   * Deadlocks Postgres' own counter (pg_stat_database.deadlocks) gained between the run's start and end: subtracted
   * from that counter on the Contention page. Null while running, or when the run has no end snapshot.
   */
  pgDeadlocks: number | null;
  /** Set while this run is the pinned baseline later runs are compared with: when, by whom, and the note given. */
  pinnedAt: string | null;
  pinnedBy: string | null;
  pinNote: string | null;
};
