import type { ReplayRunView, ScenarioResult, StrategyFlag } from './types';
import { failedChecks, unjudgedChecks, type RunComparison } from './verdict';

/** Plain-text reports for the CLI and the bench: the same facts the Replay page shows. */

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));

function outcomesLine(r: ScenarioResult): string {
  const o = r.outcomes;
  const failed = Object.entries(o.failed)
    .map(([code, n]) => `${code} ${n}`)
    .join(', ');
  return `calls ${o.calls}, succeeded ${o.succeeded}, already applied ${o.alreadyApplied}, conflicts ${o.conflicts}, retries ${o.retries}, lock timeouts ${o.lockTimeouts}, deadlocks ${o.deadlocks}${failed ? `; failed: ${failed}` : ''}`;
}

export function formatSettings(run: ReplayRunView): string[] {
  const s = run.config.settings as {
    lockTimeoutMs?: number;
    strategies?: Record<string, string>;
    retry?: { maxAttempts: number; baseMs: number; factor: number; jitterMs: number; maxDelayMs: number };
    deadlockMaxAttempts?: number;
    poolSize?: number;
    preparedStatements?: boolean;
    contentionMemoryMs?: number;
  };
  const rt = run.config.runtime;
  const server = Object.entries(rt.serverSettings)
    .filter(([k]) => ['deadlock_timeout', 'synchronous_commit', 'max_connections'].includes(k))
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return [
    `PostgreSQL ${rt.postgres ?? '?'} (${server}) · Node ${rt.node} · ${rt.cpus} CPUs · host ${rt.host}`,
    `Flags in force: ${Object.entries(s.strategies ?? {})
      .map(([op, st]) => `${op} ${st}${run.config.strategyOverrides?.[op as StrategyFlag] ? ' (chosen for this run)' : ''}`)
      .join(', ')}; lock timeout ${s.lockTimeoutMs} ms; retries ${s.retry?.maxAttempts} × ${s.retry?.baseMs} ms ×${s.retry?.factor} ±${s.retry?.jitterMs} ms (max ${s.retry?.maxDelayMs} ms); deadlock attempts ${s.deadlockMaxAttempts}; pool ${s.poolSize}; adaptive: contended for ${s.contentionMemoryMs ?? '?'} ms after a conflict; prepared statements ${s.preparedStatements === false ? 'off' : 'on'}`,
  ];
}

export function formatScenario(r: ScenarioResult): string[] {
  const lines = [`${r.verdict.toUpperCase().padEnd(5)} ${r.name} — ${r.title} (${r.source}; ${Math.round(r.durationMs)} ms)`];
  if (r.error) lines.push(`      error: ${r.error}`);
  for (const c of r.checks) {
    lines.push(`      ${c.pass === null ? 'n/j ' : c.pass ? 'ok  ' : 'MISS'} ${pad(c.label, 86)} ${pad(c.actual, 14)} target ${c.target}${c.notJudged ? ` — not judged, ${c.notJudged}` : ''}`);
  }
  if (r.latency) lines.push(`      latency ms: p50 ${r.latency.p50}, p95 ${r.latency.p95}, p99 ${r.latency.p99}, mean ${r.latency.mean}, max ${r.latency.max} (n=${r.latency.count})`);
  lines.push(`      outcomes: ${outcomesLine(r)}`);
  for (const note of r.notes) lines.push(`      note: ${note}`);
  return lines;
}

/** The missed checks first: what a release engineer needs to decide, before the detail. */
export function formatFailedChecks(results: ScenarioResult[]): string[] {
  const failed = failedChecks(results);
  const unjudged = unjudgedChecks(results);
  const smoke = unjudged.length
    ? [`Smoke run: ${unjudged.length} timing target${unjudged.length === 1 ? '' : 's'} not judged (figures shown):`, ...unjudged.map((u) => `  ${u.scenario}: ${u.label} — ${u.actual}; ${u.why}`)]
    : [];
  if (!failed.length) return results.length ? [unjudged.length ? 'Every judged check met.' : 'Every check met.', ...smoke] : [];
  return [
    `${failed.length} check${failed.length === 1 ? '' : 's'} missed:`,
    ...failed.map((f) => `  ${f.scenario}: ${f.label} — ${f.actual}${f.broke ? '' : ` (target ${f.target})`}`),
    ...smoke,
  ];
}

export function formatRun(run: ReplayRunView, comparison?: RunComparison | null): string {
  const lines = [
    `Replay run ${run.id} — ${run.status}${run.verdict ? `, verdict ${run.verdict.toUpperCase()}` : ''}`,
    `Requested by ${run.requestedBy} from the ${run.door} in ${run.environment}, ${run.createdAt}${run.finishedAt ? ` → ${run.finishedAt}` : ''}`,
    ...formatFailedChecks(run.results),
    ...formatSettings(run),
    '',
    ...run.results.flatMap((r) => [...formatScenario(r), '']),
  ];
  if (run.error) lines.push(`Run ${run.status}: ${run.error}`, '');
  if (comparison?.previousRunId) {
    lines.push(`Compared with run ${comparison.previousRunId} (${comparison.previousCreatedAt}): ${comparison.regressions} regression(s)`);
    if (comparison.settingsDifferences.length) {
      lines.push(`  WARNING: the runs used different settings, so their figures are not like for like:`);
      for (const d of comparison.settingsDifferences) lines.push(`    ${d.label}: ${d.previous} → ${d.current}`);
    }
    lines.push(`  Run-to-run spread from ${comparison.spreadRuns} earlier run(s) with the same settings.`);
    if (comparison.notCompared) lines.push(`  ${comparison.notCompared} figure(s) not compared: not enough samples in one run or both.`);
    for (const s of comparison.scenarios) {
      if (s.verdictRegression) lines.push(`  REGRESSION ${s.scenario}: was ${s.previousVerdict}, now ${s.currentVerdict}${s.newlyFailing.length ? ` (${s.newlyFailing.join('; ')})` : ''}`);
      for (const row of s.rows.filter((x) => x.regression)) {
        lines.push(`  REGRESSION ${s.scenario} ${row.label}: ${row.previous} → ${row.current}${row.change !== null ? ` (${Math.round(row.change * 100)} %)` : ''}`);
      }
      for (const row of s.rows.filter((x) => x.compared && !x.regression && x.note)) lines.push(`  not a regression: ${s.scenario} ${row.label} ${row.previous} → ${row.current}: ${row.note}`);
    }
  } else if (comparison) {
    lines.push('No earlier finished run to compare with.');
  }
  return lines.join('\n');
}
