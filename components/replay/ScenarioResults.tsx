import styles from '@/components/locks/console.module.css';
import type { ScenarioResult } from '@/lib/replay/types';
import type { ScenarioComparison } from '@/lib/replay/verdict';
import { VerdictBadge } from './format';
import r from './replay.module.css';

/** Each scenario of a run: its verdict (and whether it used to pass), checks against targets, latency and outcomes. */
export function ScenarioResults({ results, comparisons }: { results: ScenarioResult[]; comparisons: ScenarioComparison[] }) {
  const byScenario = new Map(comparisons.map((s) => [s.scenario, s]));
  if (results.length === 0) return null;
  return (
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
          {results.map((res) => (
            <ScenarioRow key={res.name} result={res} comparison={byScenario.get(res.name)} />
          ))}
        </tbody>
      </table>
    </div>
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
            <li key={c.id} title={c.notJudged}>
              <span className={c.pass === null ? r.checkSkip : c.pass ? r.checkOk : r.checkMiss} aria-label={c.pass === null ? 'not judged' : c.pass ? 'met' : 'missed'}>
                {c.pass === null ? '–' : c.pass ? '✓' : '✗'}
              </span>
              <span>
                {c.label}
                {c.notJudged && <span className={styles.hint}> · not judged, {c.notJudged}</span>}
              </span>
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

