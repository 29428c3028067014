import type { ReplayRunView, RunProgress, ScenarioName, Verdict } from './types';

/** One line of the Replay page's run list: enough to pick a run and see which flags it ran with, without the results. */
export type RunSummary = {
  id: string;
  status: ReplayRunView['status'];
  verdict: ReplayRunView['verdict'];
  door: ReplayRunView['door'];
  requestedBy: string;
  environment: string;
  createdAt: string;
  finishedAt: string | null;
  progress: RunProgress;
  /** The lock strategies in force for the run (the rollout's main flags), e.g. { update_status: 'pessimistic' }. */
  strategies: Record<string, string>;
  /** Which of those the run chose for itself instead of the configured one. */
  strategyOverrides: string[];
  sizePreset: string;
  scenarios: { name: ScenarioName; verdict: Verdict | null }[];
  cancelRequested: boolean;
  /** The pinned baseline later runs are compared with. */
  pinned: boolean;
};

export function summarizeRun(run: ReplayRunView): RunSummary {
  const settings = run.config.settings as { strategies?: Record<string, string> };
  return {
    id: run.id,
    status: run.status,
    verdict: run.verdict,
    door: run.door,
    requestedBy: run.requestedBy,
    environment: run.environment,
    createdAt: run.createdAt,
    finishedAt: run.finishedAt,
    progress: run.progress,
    strategies: Object.fromEntries(Object.entries(settings.strategies ?? {}).filter(([, s]) => s !== 'none')),
    strategyOverrides: Object.keys(run.config.strategyOverrides ?? {}),
    sizePreset: run.config.sizePreset,
    scenarios: run.scenarios.map((name) => ({ name, verdict: run.results.find((r) => r.name === name)?.verdict ?? null })),
    cancelRequested: run.cancelRequested,
    pinned: run.pinnedAt !== null,
  };
}
