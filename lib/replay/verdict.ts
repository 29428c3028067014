import { round } from './stats';
import type { Targets } from './targets';
import type { Check, ReplayRunView, ScenarioName, ScenarioResult } from './types';

/**
 * Verdicts and comparisons: pure functions of what a scenario measured and the targets in force, so that the
 * same numbers always give the same verdict, whichever door ran them, and the rules are unit-tested.
 */

type Measures = Record<string, number>;

const ms = (v: number) => `${round(v, 2)} ms`;
const perSec = (v: number) => `${Math.round(v)} /s`;
const pct = (v: number) => `${Math.round(v * 100)} %`;

function eq(id: string, label: string, actual: number, expected: number, show: (v: number) => string = String): Check {
  return { id, label, target: `= ${show(expected)}`, actual: show(actual), pass: actual === expected };
}
function atMost(id: string, label: string, actual: number, max: number, show: (v: number) => string, strict = true): Check {
  return { id, label, target: `${strict ? '<' : '≤'} ${show(max)}`, actual: show(actual), pass: Number.isFinite(actual) && (strict ? actual < max : actual <= max) };
}
function atLeast(id: string, label: string, actual: number, min: number, show: (v: number) => string): Check {
  return { id, label, target: `≥ ${show(min)}`, actual: show(actual), pass: Number.isFinite(actual) && actual >= min };
}

/** The checks of one scenario: what the targets (and the concurrency tests) demand of it. */
export function checksFor(name: ScenarioName, m: Measures, t: Targets): Check[] {
  switch (name) {
    case 'status-race':
      return [
        eq('one-wins', 'every raced intent took at least one of the two updates', m.intentsWithSuccess, m.intents),
        eq('consistent', 'final status, version and history agree with the updates that succeeded', m.consistentIntents, m.intents),
      ];
    case 'corrections-3':
    case 'corrections-50': {
      const checks = [
        eq('all-succeed', 'every correction succeeds', m.succeeded, m.calls),
        eq('version', 'version went up by one per correction', m.versionIncrement, m.calls),
        eq('history', 'correction history complete (one row and one audit event per correction)', Math.min(m.historyCount, m.auditCount), m.calls),
      ];
      if (name === 'corrections-50') checks.push(atMost('p95', 'correction latency p95', m.p95Ms, t.corrections50P95MaxMs, ms));
      return checks;
    }
    case 'identical-transitions':
      return [
        eq('all-succeed', 'every identical transition succeeds', m.succeeded, m.calls),
        eq('one-increment', 'exactly one version increment per intent', m.intentsWithOneIncrement, m.intents),
        eq('already-applied', 'the others are answered "already applied"', m.alreadyApplied, m.calls - m.intents),
      ];
    case 'nowait-executions':
      return [
        eq('one-runs', 'exactly one execution runs per round, the other fails with a lock error', m.roundsWithOneWinner, m.rounds),
        atMost('fail-fast', 'the refused execution fails fast (slowest refusal)', m.loserMaxMs, t.nowaitFailFastMaxMs, ms),
      ];
    case 'crossing-deadlock':
      return [
        atLeast('reproduced', 'a deadlock is detected in every round', m.deadlocks, m.rounds, String),
        eq('recovered', 'both transactions of every round commit (the victim by retrying)', m.recoveredRounds, m.rounds),
        atMost('recovery', 'deadlock detection and recovery, mean', m.recoveryMeanMs, t.deadlockRecoveryMeanMaxMs, ms),
      ];
    case 'sorted-bulk':
      return [
        eq('no-deadlock', 'no deadlock', m.deadlocks, 0),
        eq('no-lock-timeout', 'no lock timeout', m.lockTimeouts, 0),
        eq('all-succeed', 'every bulk update succeeds', m.succeeded, m.calls),
        eq('consistent', 'each intent’s version equals the bulk updates that changed it', m.consistentIntents, m.intents),
      ];
    case 'throughput':
      return [
        eq('all-succeed', 'every status update succeeds', m.succeeded, m.calls),
        atLeast('throughput', 'status updates per second (1,000 intents, 100 at a time)', m.throughputPerSec, t.throughputMinPerSec, perSec),
        atLeast('baseline-ratio', 'share of the raw-SQL baseline’s throughput (same transaction, pool and concurrency)', m.baselineRatio, t.baselineMinRatio, pct),
      ];
    case 'lock-latency':
      return [atMost('p95', 'uncontended lock, take and release, p95', m.p95Ms, t.lockAcquisitionP95MaxMs, ms)];
  }
}

export function verdictOf(checks: readonly Check[], error?: string): 'pass' | 'fail' {
  return !error && checks.length > 0 && checks.every((c) => c.pass) ? 'pass' : 'fail';
}

export function runVerdict(results: readonly ScenarioResult[]): 'pass' | 'fail' {
  return results.length > 0 && results.every((r) => r.verdict === 'pass') ? 'pass' : 'fail';
}

/**
 * The measures worth comparing run against run, which way is better, and the smallest change that counts (so that
 * a p95 of 1.2 ms becoming 1.5 ms is not called a regression).
 */
export const MEASURES: Record<string, { label: string; better: 'higher' | 'lower'; minDelta: number; unit: 'ms' | '/s' | 'ratio' }> = {
  throughputPerSec: { label: 'status updates /s', better: 'higher', minDelta: 50, unit: '/s' },
  baselinePerSec: { label: 'raw-SQL baseline /s', better: 'higher', minDelta: 50, unit: '/s' },
  baselineRatio: { label: 'share of baseline', better: 'higher', minDelta: 0.03, unit: 'ratio' },
  p50Ms: { label: 'latency p50', better: 'lower', minDelta: 1, unit: 'ms' },
  p95Ms: { label: 'latency p95', better: 'lower', minDelta: 1, unit: 'ms' },
  p99Ms: { label: 'latency p99', better: 'lower', minDelta: 2, unit: 'ms' },
  recoveryMeanMs: { label: 'deadlock recovery mean', better: 'lower', minDelta: 10, unit: 'ms' },
  loserMaxMs: { label: 'NOWAIT refusal, slowest', better: 'lower', minDelta: 5, unit: 'ms' },
  acquireP95Ms: { label: 'lock statement p95', better: 'lower', minDelta: 1, unit: 'ms' },
};

export type ComparisonRow = {
  scenario: ScenarioName;
  measure: string;
  label: string;
  unit: string;
  previous: number | null;
  current: number | null;
  /** Relative change, current vs previous (0.1 = 10 % higher). */
  change: number | null;
  regression: boolean;
};

export type ScenarioComparison = {
  scenario: ScenarioName;
  previousVerdict: 'pass' | 'fail' | null;
  currentVerdict: 'pass' | 'fail';
  /** A check that passed last time and fails now, or a scenario that passed and now fails. */
  verdictRegression: boolean;
  newlyFailing: string[];
  rows: ComparisonRow[];
};

export type RunComparison = {
  previousRunId: string | null;
  previousCreatedAt: string | null;
  regressions: number;
  scenarios: ScenarioComparison[];
};

export function compareResults(current: readonly ScenarioResult[], previous: readonly ScenarioResult[] | null, tolerance: number): ScenarioComparison[] {
  return current.map((cur) => {
    const prev = previous?.find((p) => p.name === cur.name) ?? null;
    const rows: ComparisonRow[] = Object.entries(MEASURES)
      .filter(([key]) => key in cur.measures || (prev && key in prev.measures))
      .map(([key, info]) => {
        const c = Number.isFinite(cur.measures[key]) ? cur.measures[key] : null;
        const p = prev && Number.isFinite(prev.measures[key]) ? prev.measures[key] : null;
        const change = c !== null && p !== null && p !== 0 ? (c - p) / Math.abs(p) : null;
        const worse = c !== null && p !== null && (info.better === 'higher' ? p - c : c - p);
        const regression = worse !== false && worse > info.minDelta && worse > Math.abs(p as number) * tolerance;
        return { scenario: cur.name, measure: key, label: info.label, unit: info.unit, previous: p, current: c, change, regression };
      });
    const newlyFailing = prev ? cur.checks.filter((c) => !c.pass && prev.checks.some((pc) => pc.id === c.id && pc.pass)).map((c) => c.label) : [];
    return {
      scenario: cur.name,
      previousVerdict: prev?.verdict ?? null,
      currentVerdict: cur.verdict,
      verdictRegression: (prev?.verdict === 'pass' && cur.verdict === 'fail') || newlyFailing.length > 0,
      newlyFailing,
      rows,
    };
  });
}

export function compareRuns(current: Pick<ReplayRunView, 'results'>, previous: Pick<ReplayRunView, 'id' | 'createdAt' | 'results'> | null, tolerance: number): RunComparison {
  const scenarios = compareResults(current.results, previous?.results ?? null, tolerance);
  const regressions = scenarios.reduce((n, s) => n + (s.verdictRegression ? 1 : 0) + s.rows.filter((r) => r.regression).length, 0);
  return { previousRunId: previous?.id ?? null, previousCreatedAt: previous?.createdAt ?? null, regressions, scenarios };
}
