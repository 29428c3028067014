import styles from '@/components/locks/console.module.css';
import { shortId } from '@/lib/console/ids';
import type { RunWithComparison } from '@/lib/replay/compare';
import { figure, when } from './format';
import r from './replay.module.css';

/** Which run this one is compared with, in words: the pinned baseline, the previous comparable run, or the one chosen. */
function comparedWithText({ previous, comparedWith, baseline, candidates }: RunWithComparison): string {
  if (!previous) {
    const others = candidates.length > 0 ? ' Earlier runs of another size are offered under “Compare with”: compared with one, the figures measure a different load.' : '';
    return `No earlier comparable run (finished, the same size, a scenario in common): the next such run will be compared with this one.${others}`;
  }
  const who = `run ${shortId(previous.id)} of ${when(previous.createdAt)}, by ${previous.requestedBy}, ${previous.verdict ?? 'no verdict'}`;
  if (comparedWith.why === 'pinned') return `Compared with the pinned baseline: ${who}; pinned by ${baseline?.pinnedBy}${baseline?.note ? ` (“${baseline.note}”)` : ''}.`;
  if (comparedWith.why === 'chosen') return `Compared with the run you chose: ${who}.`;
  return `Compared with the previous comparable run: ${who}.`;
}

/**
 * A finished run against the run it is compared with: which one and why, regressions (outside the spread of recent
 * runs with the same settings), figures left uncompared for too few samples, and a warning when the two ran with
 * different settings. The engineer may pick any earlier run of the same scenarios instead.
 */
export function ComparisonSummary({ data, against, onCompareWith }: { data: RunWithComparison; against: string | null; onCompareWith: (runId: string | null) => void }) {
  const { run, previous, comparison, comparedWith } = data;
  if (run.status === 'running') return null;
  const tone = !previous ? r.bannerNeutral : comparison.regressions ? styles.bannerError : styles.bannerOk;
  return (
    <>
      <CompareWithSelect data={data} against={against} onCompareWith={onCompareWith} />
      <div className={`${styles.banner} ${tone}`} data-testid="run-comparison-summary" data-compared-with={previous?.id ?? ''} data-why={comparedWith.why}>
        {comparedWithText(data)}
        {comparedWith.baselineNotUsed && ` ${comparedWith.baselineNotUsed}`}
        {previous && ` ${comparison.regressions === 0 ? 'No regressions' : `${comparison.regressions} regression${comparison.regressions === 1 ? '' : 's'}`}.`}
        {previous &&
          (comparison.spreadRuns >= 2
            ? ` Worse figures count only outside the spread of the last ${comparison.spreadRuns} runs with the same settings.`
            : ' Too few earlier runs with the same settings for a run-to-run spread: worse figures are judged on the tolerance alone.')}
        {previous && comparison.notCompared > 0 && (
          <span data-testid="run-not-compared">
            {' '}
            {comparison.notCompared} figure{comparison.notCompared === 1 ? '' : 's'} not compared: not enough samples in one run or both (a p95 needs 40, a p99 200, throughput 1,000 updates).
          </span>
        )}
      </div>
      {comparison.settingsDifferences.length > 0 && (
        <div className={`${styles.banner} ${styles.bannerWarn}`} role="note" data-testid="run-settings-differ">
          <strong>Not like for like:</strong> this run and the one it is compared with used different settings, so their figures measure different things.
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

/** Compare with: the default (the pinned baseline, else the previous comparable run), or any earlier run of the same scenarios. */
function CompareWithSelect({ data, against, onCompareWith }: { data: RunWithComparison; against: string | null; onCompareWith: (runId: string | null) => void }) {
  if (data.candidates.length === 0) return null;
  return (
    <label className={r.compareRow}>
      Compare with
      <select value={against ?? ''} onChange={(e) => onCompareWith(e.target.value || null)} data-testid="compare-with">
        <option value="">{data.baseline ? 'the pinned baseline when it fits, else the previous comparable run' : 'the previous comparable run'}</option>
        {data.candidates.map((c) => (
          <option key={c.id} value={c.id}>
            {when(c.createdAt)} · {c.requestedBy} · {c.sizePreset} · {c.verdict ?? 'no verdict'} · {c.scenarios.length} scenario{c.scenarios.length === 1 ? '' : 's'}
            {c.pinned ? ' · pinned baseline' : ''}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Every figure of a finished run beside the previous run's, with the change and the spread of recent runs. */
export function ComparisonFigures({ data }: { data: RunWithComparison }) {
  const { run, previous, comparison } = data;
  if (!previous || run.status === 'running' || !comparison.scenarios.some((s) => s.rows.some((x) => x.previous !== null || x.current !== null))) return null;
  return (
    <details open={comparison.regressions > 0} style={{ marginTop: '0.75rem' }}>
      <summary>Figures against the compared run</summary>
      <table className={styles.table} data-testid="run-comparison">
        <thead>
          <tr>
            <th>scenario</th>
            <th>measure</th>
            <th>compared run</th>
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
