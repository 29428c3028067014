'use client';

import { useState, useTransition } from 'react';
import styles from '@/components/locks/console.module.css';
import type { RunLockEpisodes } from '@/lib/replay/episodes';
import type { RunWithComparison } from '@/lib/replay/runner';
import { formatDuration } from '@/lib/locks/format';
import type { ScenarioResult, StrategyFlag } from '@/lib/replay/types';
import type { FailedCheck, ScenarioComparison } from '@/lib/replay/verdict';
import { operationLabel } from '@/lib/contention/series';
import type { ReplayRunView } from '@/lib/replay/types';
import { duration, figure, VerdictBadge, when } from './format';
import r from './replay.module.css';

/** One run: live progress and cancel while it runs; per-scenario verdicts, figures and outcomes; the comparison. */
export function RunDetail({ data, canCancel, onCancel }: { data: RunWithComparison; canCancel: boolean; onCancel: () => Promise<string | null> }) {
  const { run, previous, comparison, failedChecks } = data;
  const [cancelError, setCancelError] = useState<string | null>(null);
  const [cancelling, startCancel] = useTransition();
  const settings = run.config.settings as {
    strategies?: Record<string, string>;
    lockTimeoutMs?: number;
    retry?: { maxAttempts: number; baseMs: number };
    preparedStatements?: boolean;
  };
  const overall = run.progress.total ? (run.progress.done + (run.status === 'running' ? run.progress.fraction : 0)) / run.progress.total : 0;
  const byScenario = new Map(comparison.scenarios.map((s) => [s.scenario, s]));

  return (
    <div data-testid="run-detail" data-run-id={run.id} data-status={run.status}>
      <div className={styles.toolbar} style={{ justifyContent: 'space-between' }}>
        <div>
          <strong>Run {run.id.slice(0, 8)}</strong> <span data-testid="run-status">{run.status}</span> <VerdictBadge verdict={run.verdict} testId="run-verdict" />
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
      </div>
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

      <FailedChecks run={run} failed={failedChecks} />

      {run.status === 'running' && (
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
      )}
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

      {run.status !== 'running' && (
        <div className={`${styles.banner} ${!previous ? r.bannerNeutral : comparison.regressions ? styles.bannerError : styles.bannerOk}`} data-testid="run-comparison-summary">
          {previous
            ? `Compared with the previous finished run (${when(previous.createdAt)}, by ${previous.requestedBy}, ${previous.verdict ?? 'no verdict'}): ${comparison.regressions === 0 ? 'no regressions' : `${comparison.regressions} regression${comparison.regressions === 1 ? '' : 's'}`}.`
            : 'No earlier finished run to compare with: the next run will be compared with this one.'}
          {previous &&
            (comparison.spreadRuns >= 2
              ? ` Worse figures count only outside the spread of the last ${comparison.spreadRuns} runs with the same settings.`
              : ' Too few earlier runs with the same settings for a run-to-run spread: worse figures are judged on the tolerance alone.')}
        </div>
      )}
      {run.status !== 'running' && comparison.settingsDifferences.length > 0 && (
        <div className={`${styles.banner} ${styles.bannerWarn}`} role="note" data-testid="run-settings-differ">
          <strong>Not like for like:</strong> this run and the previous one used different settings, so their figures measure different things.
          <ul className={r.differences}>
            {comparison.settingsDifferences.map((d) => (
              <li key={d.key}>
                {d.label}: {d.previous} → <strong>{d.current}</strong>
              </li>
            ))}
          </ul>
        </div>
      )}

      {run.results.length > 0 && (
        <div className={styles.scroll}>
          <table className={styles.table} data-testid="run-results">
            <thead>
              <tr>
                <th>verdict</th>
                <th>scenario</th>
                <th>checks (measured · target)</th>
                <th>latency ms (p50 / p95 / p99)</th>
                <th>outcomes</th>
              </tr>
            </thead>
            <tbody>
              {run.results.map((res) => (
                <ScenarioRow key={res.name} result={res} comparison={byScenario.get(res.name)} />
              ))}
            </tbody>
          </table>
        </div>
      )}

      <RunLockEpisodesSection episodes={data.lockEpisodes} running={run.status === 'running'} />

      {previous && run.status !== 'running' && comparison.scenarios.some((s) => s.rows.some((x) => x.previous !== null || x.current !== null)) && (
        <details open={comparison.regressions > 0} style={{ marginTop: '0.75rem' }}>
          <summary>Figures against the previous run</summary>
          <table className={styles.table} data-testid="run-comparison">
            <thead>
              <tr>
                <th>scenario</th>
                <th>measure</th>
                <th>previous</th>
                <th>this run</th>
                <th>change</th>
                <th>recent runs, same settings</th>
              </tr>
            </thead>
            <tbody>
              {comparison.scenarios.flatMap((s) =>
                s.rows
                  .filter((x) => x.previous !== null || x.current !== null)
                  .map((x) => (
                    <tr
                      key={`${s.scenario}-${x.measure}`}
                      className={x.regression ? r.regression : x.context ? r.context : undefined}
                      data-regression={x.regression ? 'true' : undefined}
                      data-testid={`comparison-${s.scenario}-${x.measure}`}
                    >
                      <td>{s.scenario}</td>
                      <td>
                        {x.label}
                        {x.context && <span className={r.contextTag}> context</span>}
                      </td>
                      <td>{figure(x.previous, x.unit)}</td>
                      <td>{figure(x.current, x.unit)}</td>
                      <td className={x.regression ? r.worse : undefined}>
                        {x.change === null ? '—' : `${x.change > 0 ? '+' : ''}${Math.round(x.change * 100)} %`}
                        {x.regression ? ' regression' : ''}
                        {x.note && <div className={styles.hint}>{x.note}</div>}
                      </td>
                      <td>{x.spread ? `${figure(x.spread.min, x.unit)} – ${figure(x.spread.max, x.unit)} (${x.spread.runs} runs)` : '—'}</td>
                    </tr>
                  )),
              )}
            </tbody>
          </table>
        </details>
      )}
    </div>
  );
}

/**
 * The blockings the run caused, as the lock history recorded them (episodes begun while it ran that involve its own
 * intents), each opening on the Locks page. Lock waits too short for the sampler to see are counted in the
 * scenarios' outcomes above, not here.
 */
function RunLockEpisodesSection({ episodes, running }: { episodes: RunLockEpisodes; running: boolean }) {
  return (
    <section style={{ marginTop: '0.75rem' }} data-testid="run-lock-episodes" aria-labelledby="run-lock-episodes-title">
      <h3 id="run-lock-episodes-title" style={{ margin: '0 0 0.35rem' }}>
        Lock episodes it caused{running ? ' so far' : ''}: {episodes.total}
      </h3>
      {episodes.total === 0 ? (
        <p className={styles.hint}>
          The lock history recorded no blocking of this run’s intents. It samples once a second while anything waits, so blockings shorter than that may
          pass unrecorded; their waits are in the scenarios’ outcomes above.
        </p>
      ) : (
        <div className={styles.scroll}>
          <table className={styles.table}>
            <thead>
              <tr>
                <th>started</th>
                <th>lasted</th>
                <th>root blocker</th>
                <th>waiters (peak · seen)</th>
                <th>the run’s intents</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              {episodes.items.map((e) => (
                <tr key={e.id} data-testid={`run-episode-${e.id}`}>
                  <td className={styles.nowrap}>{when(e.startedAt)}</td>
                  <td className={styles.nowrap}>{e.endedAt ? formatDuration(e.durationMs) : `${formatDuration(e.durationMs)}, going on`}</td>
                  <td>
                    <span className={styles.mono}>pid {e.rootPid}</span>{' '}
                    <span className={styles.hint}>{e.rootOperation ? operationLabel(e.rootOperation).toLowerCase() : e.rootApplication || '(no application name)'}</span>
                  </td>
                  <td>
                    {e.peakWaiters} · {e.waitersSeen}
                  </td>
                  <td>
                    {e.intentIds.map((id) => (
                      <a key={id} href={`/intents/${id}`} className={styles.mono} style={{ marginRight: 6 }}>
                        {id.slice(0, 8)}
                      </a>
                    ))}
                  </td>
                  <td>
                    <a href={`/locks?episode=${e.id}`}>Open on Locks →</a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {episodes.total > episodes.items.length && <p className={styles.hint}>The first {episodes.items.length} of {episodes.total}, by start.</p>}
        </div>
      )}
      {episodes.stormMinutes.length > 0 && (
        <p className={styles.hint}>
          In {episodes.stormMinutes.length === 1 ? 'one minute' : `${episodes.stormMinutes.length} minutes`} of the run the lock history summarised a storm of{' '}
          {episodes.stormMinutes.reduce((n, m) => n + m.episodes, 0)} blockings instead of recording each; those are tied to no intent, may include other traffic,
          and are not counted above.
        </p>
      )}
    </section>
  );
}

function ScenarioRow({ result, comparison }: { result: ScenarioResult; comparison?: ScenarioComparison }) {
  const o = result.outcomes;
  const failed = Object.entries(o.failed);
  const regressed = Boolean(comparison?.verdictRegression);
  return (
    <tr data-testid={`scenario-${result.name}`} className={regressed ? r.regression : undefined}>
      <td>
        <VerdictBadge verdict={result.verdict} testId={`scenario-verdict-${result.name}`} />
        {regressed && (
          <div className={r.worse} title={comparison?.newlyFailing.join('; ')}>
            was {comparison?.previousVerdict}
          </div>
        )}
      </td>
      <td>
        <strong>{result.title}</strong>
        <div className={r.figures} title={`Where this scenario comes from in the design documents: ${result.source}`}>
          {result.name} · {Math.round(result.durationMs)} ms
        </div>
        {result.notes.map((n) => (
          <div key={n} className={styles.hint}>
            {n}
          </div>
        ))}
      </td>
      <td>
        {result.error && <div className={r.checkMiss}>broke: {result.error}</div>}
        <ul className={r.checks}>
          {result.checks.map((c) => (
            <li key={c.id}>
              <span className={c.pass ? r.checkOk : r.checkMiss} aria-label={c.pass ? 'met' : 'missed'}>
                {c.pass ? '✓' : '✗'}
              </span>
              <span>{c.label}</span>
              <span className={r.figures}>
                {c.actual} · {c.target}
              </span>
            </li>
          ))}
        </ul>
      </td>
      <td className={r.figures}>{result.latency ? `${result.latency.p50} / ${result.latency.p95} / ${result.latency.p99} (n=${result.latency.count})` : '—'}</td>
      <td className={r.figures}>
        {o.succeeded}/{o.calls} ok · {o.alreadyApplied} already applied · {o.conflicts} conflicts · {o.retries} retries · {o.lockTimeouts} lock timeouts · {o.deadlocks} deadlocks
        {failed.length > 0 && (
          <div title={Object.values(o.failedExamples ?? {}).join('\n')}>
            failed: {failed.map(([code, n]) => `${code} ${n}`).join(', ')}
          </div>
        )}
      </td>
    </tr>
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
        Every check met, in all {run.results.length} scenarios.
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
