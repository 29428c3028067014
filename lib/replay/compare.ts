import { z } from 'zod';
import { ValidationError } from '@/lib/shared/errors';
import { parseInput } from '@/lib/shared/validation';
import { lockEpisodesOfRun, type RunLockEpisodes } from './episodes';
import { pinnedBaseline, type PinnedBaseline } from './pinning';
import { comparableRunsBefore, finishedRunsBefore, getRun, type CompareCandidate } from './runs';
import type { ReplayRunView } from './types';
import { compareRuns, failedChecks, unjudgedChecks, type FailedCheck, type RunComparison, type UnjudgedCheck } from './verdict';

/**
 * Which earlier run a run is compared with, and the comparison: the run the engineer chose, else the pinned
 * baseline when it fits (earlier, a scenario in common, the same size), else the previous comparable run (the
 * latest earlier finished run of the same size with a scenario in common).
 */

export type ComparedWith = {
  /** How the compared run was picked. */
  why: 'chosen' | 'pinned' | 'previous' | 'none';
  /** When a baseline is pinned and the run is not compared with it: why not. */
  baselineNotUsed: string | null;
};

/** A run as the Replay page, the API and the CLI report it: its missed checks first, then the comparison, and the lock episodes it caused. */
export type RunWithComparison = {
  run: ReplayRunView;
  previous: ReplayRunView | null;
  comparedWith: ComparedWith;
  baseline: PinnedBaseline | null;
  /** Earlier finished runs with a scenario in common, newest first: what the engineer may compare with instead. */
  candidates: CompareCandidate[];
  comparison: RunComparison;
  failedChecks: FailedCheck[];
  unjudgedChecks: UnjudgedCheck[];
  lockEpisodes: RunLockEpisodes;
};

/** Earlier finished runs read for the run-to-run spread: the spread itself uses those with the same settings. */
const HISTORY_RUNS = 20;
/** Earlier runs offered to compare with. */
const CANDIDATE_RUNS = 50;

export const compareQuerySchema = z.strictObject({ against: z.uuid({ error: 'must be a run id (a UUID)' }).optional() });

const short = (id: string) => id.slice(0, 8);
const sizeOf = (run: ReplayRunView) => run.config.sizePreset;
const sharesScenario = (a: ReplayRunView, b: ReplayRunView) => a.scenarios.some((s) => b.scenarios.includes(s));

/** Why the pinned baseline is not what this run is compared with by default (null: it is). */
function baselineMisfit(run: ReplayRunView, base: ReplayRunView): string | null {
  if (base.id === run.id) return 'This run is the pinned baseline.';
  if (Date.parse(base.createdAt) >= Date.parse(run.createdAt)) return `The pinned baseline (run ${short(base.id)}) is newer than this run.`;
  if (!sharesScenario(run, base)) return `The pinned baseline (run ${short(base.id)}) ran none of this run’s scenarios.`;
  if (sizeOf(base) !== sizeOf(run)) return `The pinned baseline (run ${short(base.id)}) ran at ${sizeOf(base)} size, this run at ${sizeOf(run)}: pick it below to see them side by side anyway.`;
  return null;
}

/** The run the engineer asked to compare with: an earlier finished run with a scenario in common, else 400 naming `against`. */
async function chosenRun(run: ReplayRunView, against: string): Promise<ReplayRunView> {
  const chosen = against === run.id ? null : await getRun(against);
  if (!chosen || chosen.status !== 'finished' || Date.parse(chosen.createdAt) >= Date.parse(run.createdAt) || !sharesScenario(run, chosen)) {
    throw new ValidationError([{ field: 'against', message: 'must be an earlier finished run with a scenario in common with this one' }]);
  }
  return chosen;
}

async function pick(run: ReplayRunView, candidates: CompareCandidate[], baseline: PinnedBaseline | null, against: string | undefined): Promise<{ previous: ReplayRunView | null; comparedWith: ComparedWith }> {
  const base = baseline ? await getRun(baseline.runId) : null;
  const misfit = base ? baselineMisfit(run, base) : null;
  if (against) return { previous: await chosenRun(run, against), comparedWith: { why: 'chosen', baselineNotUsed: null } };
  if (base && !misfit) return { previous: base, comparedWith: { why: 'pinned', baselineNotUsed: null } };
  const previousId = candidates.find((c) => c.sizePreset === sizeOf(run))?.id;
  const previous = previousId ? await getRun(previousId) : null;
  return { previous, comparedWith: { why: previous ? 'previous' : 'none', baselineNotUsed: misfit } };
}

export async function runWithComparison(id: string, query: unknown = {}): Promise<RunWithComparison | null> {
  const runId = parseInput(z.uuid({ error: 'must be a UUID' }), id, 'runId');
  // Bad input is refused before anything is read, whether or not the run exists.
  const { against } = parseInput(compareQuerySchema, query);
  const run = await getRun(runId);
  if (!run) return null;
  const [candidates, baseline, earlier] = await Promise.all([comparableRunsBefore(run, CANDIDATE_RUNS), pinnedBaseline(), finishedRunsBefore(run, HISTORY_RUNS)]);
  const { previous, comparedWith } = await pick(run, candidates, baseline, against);
  return {
    run,
    previous,
    comparedWith,
    baseline,
    candidates,
    comparison: compareRuns(run, previous, run.config.targets.regressionTolerance, earlier),
    failedChecks: failedChecks(run.results),
    unjudgedChecks: unjudgedChecks(run.results),
    lockEpisodes: await lockEpisodesOfRun(run),
  };
}
