'use client';

import { useState, useTransition } from 'react';
import styles from '@/components/locks/console.module.css';
import { operationLabel } from '@/lib/contention/series';
import { shortId } from '@/lib/console/ids';
import type { RunWithComparison } from '@/lib/replay/compare';
import type { ReplayRunView, StrategyFlag } from '@/lib/replay/types';
import { JUDGED_FROM, type FailedCheck, type UnjudgedCheck } from '@/lib/replay/verdict';
import { BaselinePin } from './BaselinePin';
import { duration, VerdictBadge, when } from './format';
import { ComparisonFigures, ComparisonSummary } from './RunComparison';
import { RunLockEpisodesSection } from './RunLockEpisodes';
import { ScenarioResults } from './ScenarioResults';
import r from './replay.module.css';

type RunDetailProps = {
  data: RunWithComparison;
  /** The earlier run chosen to compare with (null: the default). */
  against: string | null;
  onCompareWith: (runId: string | null) => void;
  canCancel: boolean;
  onCancel: () => Promise<string | null>;
};

/** One run: live progress and cancel while it runs; per-scenario verdicts, figures and outcomes; its baseline pin; the comparison. */
export function RunDetail({ data, against, onCompareWith, canCancel, onCancel }: RunDetailProps) {
  const { run, comparison, failedChecks } = data;
  const [cancelError, setCancelError] = useState<string | null>(null);
  const [cancelling, startCancel] = useTransition();

  return (
    <div data-testid="run-detail" data-run-id={run.id} data-status={run.status}>
      <div className={styles.toolbar} style={{ justifyContent: 'space-between' }}>
        <div>
          <strong>Run {shortId(run.id)}</strong> <span data-testid="run-status">{run.status}</span> <VerdictBadge verdict={run.verdict} testId="run-verdict" />
        </div>
        {run.status === 'running' && canCancel && (
          <button
            type="button"
            className="btn btn-danger btn-sm"
            disabled={cancelling || run.cancelRequested}
            data-testid="replay-cancel"
            onClick={() =>
              startCancel(async () => {
                setCancelError(await onCancel());
              })
            }
          >
            {run.cancelRequested ? 'Cancel requested' : cancelling ? 'Cancelling…' : 'Cancel run'}
          </button>
        )}
        <BaselinePin run={run} canPin={canCancel} />
      </div>
      <RunMeta run={run} />
      <FailedChecks run={run} failed={failedChecks} />
      <UnjudgedChecks run={run} unjudged={data.unjudgedChecks} />
      {run.status === 'running' && <RunProgress run={run} />}
      {cancelError && (
        <div className={`${styles.banner} ${styles.bannerError}`} role="alert">
          {cancelError}
        </div>
      )}
      {run.error && (
        <div className={`${styles.banner} ${run.status === 'cancelled' ? styles.bannerWarn : styles.bannerError}`} role="status">
          {run.status === 'cancelled' ? 'Cancelled' : 'Failed'}: {run.error}
        </div>
      )}
      <ComparisonSummary data={data} against={against} onCompareWith={onCompareWith} />
      <ScenarioResults results={run.results} comparisons={comparison.scenarios} />
      <RunLockEpisodesSection episodes={data.lockEpisodes} running={run.status === 'running'} />
      <ComparisonFigures data={data} />
    </div>
  );
}

/** Who started the run, from where, how long it took, and the settings it ran with. */
function RunMeta({ run }: { run: ReplayRunView }) {
  const settings = run.config.settings as {
    strategies?: Record<string, string>;
    lockTimeoutMs?: number;
    retry?: { maxAttempts: number; baseMs: number };
    preparedStatements?: boolean;
  };
  return (
    <p className={r.meta}>
      Started {when(run.createdAt)} by {run.requestedBy} from the {run.door} in {run.environment}
      {run.finishedAt ? `, took ${duration(run.createdAt, run.finishedAt)}` : `, running for ${duration(run.createdAt, null)}`}; sizes {run.config.sizePreset}; ran with{' '}
      <span className={styles.mono}>
        {Object.entries(settings.strategies ?? {})
          .filter(([, s]) => s !== 'none')
          .map(([op, s]) => `${operationLabel(op).toLowerCase()} ${s}${run.config.strategyOverrides?.[op as StrategyFlag] ? ' (chosen for this run)' : ''}`)
          .join(', ')}
        , lock timeout {settings.lockTimeoutMs} ms, {settings.retry?.maxAttempts} retries from {settings.retry?.baseMs} ms
        {settings.preparedStatements === false ? ', unprepared statements' : ''}
      </span>
      ; PostgreSQL {run.config.runtime.postgres} (deadlock_timeout {run.config.runtime.serverSettings.deadlock_timeout ?? '?'}).
    </p>
  );
}

function RunProgress({ run }: { run: ReplayRunView }) {
  const overall = run.progress.total ? (run.progress.done + (run.status === 'running' ? run.progress.fraction : 0)) / run.progress.total : 0;
  return (
    <div data-testid="run-progress">
      <div className={r.progress} role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(overall * 100)} aria-label="Run progress">
        <div className={r.progressBar} style={{ width: `${Math.round(overall * 100)}%` }} />
      </div>
      <p className={styles.sectionNote} aria-live="polite">
        {run.progress.done} of {run.progress.total} scenarios done
        {run.progress.current ? ` · now ${run.progress.current}: ${run.progress.note} (${Math.round(run.progress.fraction * 100)} %)` : ''}
        {run.cancelRequested ? ` · cancel requested by ${run.cancelledBy ?? 'someone'}, stopping at the next step` : ''}
      </p>
    </div>
  );
}

/**
 * What a release engineer reads first: every check the run missed (and any scenario that broke), measured against
 * its target, or that every check was met. While the run goes, the misses so far.
 */
function FailedChecks({ run, failed }: { run: ReplayRunView; failed: FailedCheck[] }) {
  if (run.results.length === 0) return null;
  if (failed.length === 0) {
    return run.status === 'finished' ? (
      <div className={`${styles.banner} ${styles.bannerOk}`} data-testid="run-failed-checks" data-count="0">
        Every {run.verdict === 'smoke' ? 'judged ' : ''}check met, in all {run.results.length} scenarios.
      </div>
    ) : null;
  }
  return (
    <div className={`${styles.banner} ${styles.bannerError}`} data-testid="run-failed-checks" data-count={failed.length}>
      <strong>
        {failed.length} check{failed.length === 1 ? '' : 's'} missed{run.status === 'running' ? ' so far' : ''}
      </strong>
      <ul className={r.differences}>
        {failed.map((f) => (
          <li key={`${f.scenario}-${f.label}`}>
            {f.title}: {f.label} — <strong>{f.actual}</strong>
            {f.broke ? '' : ` (target ${f.target})`}
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * A smoke run: the timing targets it was too small to judge, each with its figure and what it would need. Targets
 * are not scaled down: a rate, a percentile or a mean over a few operations says nothing about the load the target
 * is set for. Correctness checks are judged at any size.
 */
function UnjudgedChecks({ run, unjudged }: { run: ReplayRunView; unjudged: UnjudgedCheck[] }) {
  if (unjudged.length === 0) return null;
  return (
    <div className={`${styles.banner} ${r.bannerNeutral}`} data-testid="run-unjudged" data-count={unjudged.length} role="note">
      <strong>
        Smoke run{run.config.sizePreset !== 'full' ? ` (${run.config.sizePreset} size)` : ''}: {unjudged.length} timing target{unjudged.length === 1 ? '' : 's'} not judged
      </strong>{' '}
      — the figures are shown, without pass or fail. The targets are set for full-size runs (e.g. {JUDGED_FROM.throughput.operations} status updates, {JUDGED_FROM.throughput.inFlight} in flight) and
      are not scaled down: a rate, percentile or mean over a few operations says nothing about that load. Correctness checks are judged at any size.
      <ul className={r.differences}>
        {unjudged.map((u) => (
          <li key={`${u.scenario}-${u.label}`}>
            {u.title}: {u.label} — <strong>{u.actual}</strong> (target {u.target}): {u.why}
          </li>
        ))}
      </ul>
    </div>
  );
}
