import styles from '@/components/locks/console.module.css';
import type { RunWithComparison } from '@/lib/replay/runner';
import { figure, when } from './format';
import r from './replay.module.css';

/**
 * A finished run against the previous finished one: regressions (outside the spread of recent runs with the same
 * settings), and a warning when the two ran with different settings.
 */
export function ComparisonSummary({ data }: { data: RunWithComparison }) {
  const { run, previous, comparison } = data;
  if (run.status === 'running') return null;
  return (
    <>
      <div className={`${styles.banner} ${!previous ? r.bannerNeutral : comparison.regressions ? styles.bannerError : styles.bannerOk}`} data-testid="run-comparison-summary">
        {previous
          ? `Compared with the previous finished run (${when(previous.createdAt)}, by ${previous.requestedBy}, ${previous.verdict ?? 'no verdict'}): ${comparison.regressions === 0 ? 'no regressions' : `${comparison.regressions} regression${comparison.regressions === 1 ? '' : 's'}`}.`
          : 'No earlier finished run to compare with: the next run will be compared with this one.'}
        {previous &&
          (comparison.spreadRuns >= 2
            ? ` Worse figures count only outside the spread of the last ${comparison.spreadRuns} runs with the same settings.`
            : ' Too few earlier runs with the same settings for a run-to-run spread: worse figures are judged on the tolerance alone.')}
      </div>
      {comparison.settingsDifferences.length > 0 && (
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
    </>
  );
}

/** Every figure of a finished run beside the previous run's, with the change and the spread of recent runs. */
export function ComparisonFigures({ data }: { data: RunWithComparison }) {
  const { run, previous, comparison } = data;
  if (!previous || run.status === 'running' || !comparison.scenarios.some((s) => s.rows.some((x) => x.previous !== null || x.current !== null))) return null;
  return (
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
  );
}
