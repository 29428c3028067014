import type { PipelineRunRecord } from '@/lib/pipeline/types';

/**
 * One failed attempt at an intent, as a job console lists a job's errors: which attempt of which round, when, by
 * which door and actor, which bridge failed and with what error.
 */
export type FailedAttempt = {
  runId: string;
  round: number;
  attempt: number;
  /** When the failure was recorded (the step's end; the run's when no step says). */
  at: string;
  door: string;
  actor: string;
  /** Null when the run failed outside any bridge (its worker stopped, say). */
  bridge: string | null;
  error: string;
};

const FAILED_RUNS = new Set<PipelineRunRecord['status']>(['failed', 'finished_with_errors', 'abandoned']);

/**
 * The failures in an intent's runs, newest first (the runs come newest first): each failed step of a failed run,
 * or the run's own error when no step failed (an abandoned run names the step it was on).
 */
export function failedAttempts(runs: readonly PipelineRunRecord[]): FailedAttempt[] {
  return runs.flatMap((run) => {
    if (!FAILED_RUNS.has(run.status)) return [];
    const base = { runId: run.id, round: run.round, attempt: run.attempt, door: run.door, actor: run.actor };
    const failedSteps = run.steps.filter((s) => s.status === 'failed' && s.error);
    if (failedSteps.length > 0) {
      return failedSteps.map((s) => ({ ...base, at: s.finishedAt ?? run.finishedAt ?? run.startedAt, bridge: s.bridge, error: s.error! }));
    }
    const stoppedAt = run.steps.find((s) => s.status === 'abandoned' || s.status === 'running');
    return [{ ...base, at: run.finishedAt ?? run.startedAt, bridge: stoppedAt?.bridge ?? null, error: run.error ?? `the run ended ${run.status.replace(/_/g, ' ')} without an error recorded` }];
  });
}
