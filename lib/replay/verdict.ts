import { round } from './stats';
import type { Targets } from './targets';
import type { Check, ReplayRunView, RunConfig, ScenarioName, ScenarioResult, Verdict } from './types';

/**
 * Verdicts and comparisons: pure functions of what a scenario measured and the targets in force, so that the
 * same numbers always give the same verdict, whichever door ran them, and the rules are unit-tested.
 */

type Measures = Record<string, number>;

/** A figure in words; `digits`, when given, fixes how many decimals (to tell a figure from its target apart). */
type Show = (v: number, digits?: number) => string;
const ms: Show = (v, digits) => `${digits === undefined ? round(v, 2) : v.toFixed(digits)} ms`;
const perSec: Show = (v, digits) => `${digits === undefined ? Math.round(v) : v.toFixed(digits)} /s`;
const pct: Show = (v, digits) => `${digits === undefined ? Math.round(v * 100) : (v * 100).toFixed(digits)} %`;

function eq(id: string, label: string, actual: number, expected: number, show: (v: number) => string = String): Check {
  return { id, label, target: `= ${show(expected)}`, actual: show(actual), pass: actual === expected };
}
/**
 * The figure as shown beside its target. Rounded as the target is, a figure on the wrong side of the target can read
 * as the target itself ("80 %" failing "≥ 80 %"); then it is shown with as many more digits as it takes to tell them
 * apart ("79.7 %").
 */
function shownAgainst(actual: number, target: number, pass: boolean, show: Show): string {
  if (pass || !Number.isFinite(actual) || show(actual) !== show(target)) return show(actual);
  for (let digits = 1; digits <= 6; digits++) if (show(actual, digits) !== show(target, digits)) return show(actual, digits);
  return show(actual);
}

function atMost(id: string, label: string, actual: number, max: number, show: Show, strict = true): Check {
  const pass = Number.isFinite(actual) && (strict ? actual < max : actual <= max);
  return { id, label, target: `${strict ? '<' : '≤'} ${show(max)}`, actual: shownAgainst(actual, max, pass, show), pass };
}
function atLeast(id: string, label: string, actual: number, min: number, show: Show): Check {
  const pass = Number.isFinite(actual) && actual >= min;
  return { id, label, target: `≥ ${show(min)}`, actual: shownAgainst(actual, min, pass, show), pass };
}

/**
 * The size below which a timing target is not judged. The targets are not scaled down with the run: a rate, a
 * percentile or a mean is a statement about many operations under a given load (a throughput of 60 updates is
 * mostly start-up; the p95 of 10 samples is the slowest but one of them; 10 concurrent corrections are a lighter
 * load than the 50 the target is set for), and no honest formula turns the full-size target into a small one. So a
 * smaller run is a smoke run for those targets: its figures are shown, not judged. Correctness checks (every call
 * succeeds, exactly one increment…) and targets every single operation must meet (a NOWAIT refusal fails fast)
 * hold at any size and are always judged.
 */
export const JUDGED_FROM = {
  /** Status updates per second and the share of the raw-SQL baseline: the target's own load. */
  throughput: { operations: 1000, inFlight: 100 },
  /** The corrections-50 p95: the target is about 50 concurrent corrections of one intent. */
  corrections50: 50,
  /** A p95 over fewer samples is one of the slowest two: the run's worst moments, not its 95th percentile. */
  lockLatencyP95: 40,
  /** A mean recovery over fewer deadlocks than the target's rounds. */
  deadlockRounds: 5,
} as const;

/** Operations behind a latency figure: the samples when the scenario recorded them, else its calls. */
const samplesOf = (m: Measures) => (Number.isFinite(m.samples) ? m.samples : Number.isFinite(m.calls) ? m.calls : 0);

/** The check, or the check shown and not judged when the run measured fewer than `need` operations. */
function judgedFrom(check: Check, have: number, need: number, what: string, extra = ''): Check {
  if (have >= need && !extra) return check;
  return { ...check, pass: null, notJudged: `too small to judge: needs ≥ ${need} ${what} (this run: ${have}${extra})` };
}

function throughputSized(check: Check, m: Measures): Check {
  const { operations, inFlight } = JUDGED_FROM.throughput;
  const fewInFlight = Number.isFinite(m.inFlight) && m.inFlight < inFlight;
  if ((m.calls ?? 0) >= operations && !fewInFlight) return check;
  return judgedFrom(check, m.calls ?? 0, operations, `status updates, ${inFlight} in flight`, Number.isFinite(m.inFlight) ? `, ${m.inFlight} in flight` : '');
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
      if (name === 'corrections-50') {
        checks.push(judgedFrom(atMost('p95', 'correction latency p95', m.p95Ms, t.corrections50P95MaxMs, ms), m.calls ?? 0, JUDGED_FROM.corrections50, 'concurrent corrections'));
      }
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
        judgedFrom(atMost('recovery', 'deadlock detection and recovery, mean', m.recoveryMeanMs, t.deadlockRecoveryMeanMaxMs, ms), m.rounds ?? 0, JUDGED_FROM.deadlockRounds, 'deadlocks'),
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
        throughputSized(atLeast('throughput', 'status updates per second (1,000 intents, 100 at a time)', m.throughputPerSec, t.throughputMinPerSec, perSec), m),
        throughputSized(atLeast('baseline-ratio', 'share of the raw-SQL baseline’s throughput (same transaction, pool and concurrency)', m.baselineRatio, t.baselineMinRatio, pct), m),
      ];
    case 'lock-latency':
      return [judgedFrom(atMost('p95', 'uncontended lock, take and release, p95', m.p95Ms, t.lockAcquisitionP95MaxMs, ms), samplesOf(m), JUDGED_FROM.lockLatencyP95, 'locks')];
  }
}

/** Fail on any missed check (or a broken scenario); smoke when the rest passed but some targets were not judged. */
export function verdictOf(checks: readonly Check[], error?: string): Verdict {
  if (error || checks.length === 0 || checks.some((c) => c.pass === false)) return 'fail';
  return checks.some((c) => c.pass === null) ? 'smoke' : 'pass';
}

export function runVerdict(results: readonly ScenarioResult[]): Verdict {
  if (results.length === 0 || results.some((r) => r.verdict === 'fail')) return 'fail';
  return results.some((r) => r.verdict === 'smoke') ? 'smoke' : 'pass';
}

/**
 * The measures worth comparing run against run, which way is better, and the smallest change that counts (so that
 * a p95 of 1.2 ms becoming 1.5 ms is not called a regression).
 *
 * - `context`: a figure that describes the machine, not the engine (the raw-SQL baseline): shown beside the others
 *   to explain them, never a regression.
 * - `confirmedBy`: a figure the machine moves as much as the engine (throughput) counts as a regression only when
 *   that measure (its share of the baseline, measured side by side in the same run) regressed too.
 * - `sample`: what the figure rests on and how much of it both runs need before the figures are compared at all. A
 *   percentile compares only when each run has at least two samples beyond it (p95: 40, p99: 200), so that it is not
 *   just the slowest call of a handful; rates and means need the size their target is set for.
 */
export type MeasureInfo = {
  label: string;
  better: 'higher' | 'lower';
  minDelta: number;
  unit: 'ms' | '/s' | 'ratio';
  context?: string;
  confirmedBy?: string;
  sample: { of: 'latency' | 'calls' | 'rounds'; min: number; what: string };
};

const UPDATES = { of: 'calls', min: JUDGED_FROM.throughput.operations, what: 'status updates' } as const;
const latencySamples = (min: number) => ({ of: 'latency', min, what: 'samples' }) as const;

export const MEASURES: Record<string, MeasureInfo> = {
  throughputPerSec: { label: 'status updates /s', better: 'higher', minDelta: 50, unit: '/s', confirmedBy: 'baselineRatio', sample: UPDATES },
  baselinePerSec: { label: 'raw-SQL baseline /s', better: 'higher', minDelta: 50, unit: '/s', context: 'the raw-SQL baseline measures the machine, not the engine', sample: UPDATES },
  baselineRatio: { label: 'share of baseline', better: 'higher', minDelta: 0.03, unit: 'ratio', sample: UPDATES },
  p50Ms: { label: 'latency p50', better: 'lower', minDelta: 1, unit: 'ms', sample: latencySamples(20) },
  p95Ms: { label: 'latency p95', better: 'lower', minDelta: 1, unit: 'ms', sample: latencySamples(40) },
  p99Ms: { label: 'latency p99', better: 'lower', minDelta: 2, unit: 'ms', sample: latencySamples(200) },
  recoveryMeanMs: { label: 'deadlock recovery mean', better: 'lower', minDelta: 10, unit: 'ms', sample: { of: 'rounds', min: JUDGED_FROM.deadlockRounds, what: 'deadlocks' } },
  loserMaxMs: { label: 'NOWAIT refusal, slowest', better: 'lower', minDelta: 5, unit: 'ms', sample: { of: 'rounds', min: 5, what: 'rounds' } },
  acquireP95Ms: { label: 'lock statement p95', better: 'lower', minDelta: 1, unit: 'ms', sample: { of: 'calls', min: 40, what: 'locks' } },
};

/** How many operations a figure of this result rests on (latency: its samples, else its calls). */
export function sampleCount(result: Pick<ScenarioResult, 'latency' | 'measures'>, of: MeasureInfo['sample']['of']): number {
  const m = result.measures;
  const n = of === 'latency' ? (result.latency?.count ?? m.samples ?? m.calls) : of === 'calls' ? m.calls : m.rounds;
  return Number.isFinite(n) ? n : 0;
}

/** How many earlier comparable runs (same settings) make the run-to-run spread a figure must leave to regress. */
export const SPREAD_RUNS = 5;

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
  /** False when either run had too few samples for this figure: it is shown, not compared. */
  compared: boolean;
  /** What the figure rests on in each run, and what each run needs before it is compared. */
  samples: { previous: number | null; current: number; needed: number; what: string };
  /** A figure about the machine (the raw-SQL baseline): context for the others, never a regression. */
  context: boolean;
  /** The range of this figure over the recent runs with the same settings (the run-to-run spread), when there were two or more. */
  spread: { min: number; max: number; runs: number } | null;
  /** Why a worse figure is not a regression (within the spread, the machine was slower, context, too few samples), for people. */
  note: string | null;
};

export type ScenarioComparison = {
  scenario: ScenarioName;
  previousVerdict: Verdict | null;
  currentVerdict: Verdict;
  /** A check that passed last time and fails now, or a scenario that ran to the end and now breaks. */
  verdictRegression: boolean;
  newlyFailing: string[];
  rows: ComparisonRow[];
};

/** A setting the two compared runs did not share: their figures are not like for like. */
export type SettingDifference = { key: string; label: string; previous: string; current: string };

export type RunComparison = {
  previousRunId: string | null;
  previousCreatedAt: string | null;
  regressions: number;
  /** Figures both runs reported that were not compared: one run or both had too few samples for them. */
  notCompared: number;
  scenarios: ScenarioComparison[];
  /** What differed between this run and the previous one (strategies, timeouts, pool, sizes, targets, machine). */
  settingsDifferences: SettingDifference[];
  /** How many earlier runs with the same settings gave the run-to-run spread. */
  spreadRuns: number;
};

/**
 * Whether `current` is a regression against `previous`, by the rules of docs/REPLAY.md: worse by more than the
 * measure's absolute floor and by more than `tolerance` of the previous figure, outside the range the same figure
 * took over the recent runs with the same settings (when two or more are known), and for a figure the machine moves
 * (`confirmedBy`), only when the side-by-side measure that cancels the machine out regressed as well.
 */
function judge(info: MeasureInfo, current: number | null, previous: number | null, spread: ComparisonRow['spread'], tolerance: number, confirmed: boolean | null): { regression: boolean; note: string | null } {
  if (current === null || previous === null) return { regression: false, note: null };
  const worse = info.better === 'higher' ? previous - current : current - previous;
  if (!(worse > info.minDelta && worse > Math.abs(previous) * tolerance)) return { regression: false, note: null };
  if (info.context) return { regression: false, note: `worse, but context: ${info.context}` };
  if (spread && (info.better === 'higher' ? current >= spread.min : current <= spread.max)) {
    return { regression: false, note: `worse, but within the spread of the last ${spread.runs} runs with the same settings` };
  }
  if (confirmed === false) return { regression: false, note: 'worse, but the raw-SQL baseline fell as much in the same run: the machine was slower' };
  return { regression: true, note: null };
}

function spreadOf(key: string, name: ScenarioName, history: readonly (readonly ScenarioResult[])[]): ComparisonRow['spread'] {
  // Only runs that measured enough of this figure to compare it give it a range.
  const values = history
    .map((results) => results.find((r) => r.name === name))
    .filter((r): r is ScenarioResult => Boolean(r) && sampleCount(r!, MEASURES[key].sample.of) >= MEASURES[key].sample.min)
    .map((r) => r.measures[key])
    .filter((v): v is number => Number.isFinite(v));
  return values.length >= 2 ? { min: Math.min(...values), max: Math.max(...values), runs: values.length } : null;
}

function compareRow(cur: ScenarioResult, prev: ScenarioResult | null, key: string, tolerance: number, history: readonly (readonly ScenarioResult[])[], confirming: ComparisonRow | undefined): ComparisonRow {
  const info = MEASURES[key];
  const valueOf = (m: Record<string, number> | undefined) => (m && Number.isFinite(m[key]) ? m[key] : null);
  const c = valueOf(cur.measures);
  const p = valueOf(prev?.measures);
  const samples = { previous: prev ? sampleCount(prev, info.sample.of) : null, current: sampleCount(cur, info.sample.of), needed: info.sample.min, what: info.sample.what };
  const change = c !== null && p !== null && p !== 0 ? (c - p) / Math.abs(p) : null;
  const base = { scenario: cur.name, measure: key, label: info.label, unit: info.unit, previous: p, current: c, change, samples, context: Boolean(info.context) };
  const enough = samples.current >= info.sample.min && (samples.previous ?? 0) >= info.sample.min;
  if (c !== null && p !== null && !enough) {
    const note = `not enough samples to compare: needs ≥ ${info.sample.min} ${info.sample.what} in both runs (previous ${samples.previous}, this run ${samples.current})`;
    return { ...base, regression: false, compared: false, spread: null, note };
  }
  const spread = spreadOf(key, cur.name, history);
  const confirmed = info.confirmedBy && confirming?.compared && confirming.current !== null && confirming.previous !== null ? confirming.regression : null;
  const { regression, note } = judge(info, c, p, spread, tolerance, confirmed);
  return { ...base, regression, compared: c !== null && p !== null, spread, note };
}

export function compareResults(
  current: readonly ScenarioResult[],
  previous: readonly ScenarioResult[] | null,
  tolerance: number,
  history: readonly (readonly ScenarioResult[])[] = [],
): ScenarioComparison[] {
  return current.map((cur) => {
    const prev = previous?.find((p) => p.name === cur.name) ?? null;
    const keys = Object.keys(MEASURES).filter((key) => key in cur.measures || (prev && key in prev.measures));
    const first = new Map<string, ComparisonRow>();
    // Measures that confirm others first, so a confirmed measure can read their verdict.
    const order = [...keys].sort((a, b) => Number(Boolean(MEASURES[a].confirmedBy)) - Number(Boolean(MEASURES[b].confirmedBy)));
    for (const key of order) first.set(key, compareRow(cur, prev, key, tolerance, history, MEASURES[key].confirmedBy ? first.get(MEASURES[key].confirmedBy!) : undefined));
    const rows = keys.map((key) => first.get(key)!);
    // A check counts as newly failing only when both runs judged it: a target one run was too small for says nothing.
    const newlyFailing = prev ? cur.checks.filter((c) => c.pass === false && prev.checks.some((pc) => pc.id === c.id && pc.pass === true)).map((c) => c.label) : [];
    const newlyBroken = Boolean(prev && cur.error && !prev.error);
    return {
      scenario: cur.name,
      previousVerdict: prev?.verdict ?? null,
      currentVerdict: cur.verdict,
      verdictRegression: newlyBroken || newlyFailing.length > 0,
      newlyFailing,
      rows,
    };
  });
}

type Comparable = Pick<ReplayRunView, 'results'> & { config?: RunConfig };

export function compareRuns(
  current: Comparable,
  previous: (Comparable & Pick<ReplayRunView, 'id' | 'createdAt'>) | null,
  tolerance: number,
  history: readonly Comparable[] = [],
): RunComparison {
  // The spread comes only from runs like this one: a different strategy or machine is another distribution.
  const alike = history.filter((h) => settingsDifferences(h.config, current.config).length === 0).slice(0, SPREAD_RUNS);
  const scenarios = compareResults(
    current.results,
    previous?.results ?? null,
    tolerance,
    alike.map((h) => h.results),
  );
  const regressions = scenarios.reduce((n, s) => n + (s.verdictRegression ? 1 : 0) + s.rows.filter((r) => r.regression).length, 0);
  const notCompared = scenarios.reduce((n, s) => n + s.rows.filter((r) => !r.compared && r.previous !== null && r.current !== null).length, 0);
  return {
    previousRunId: previous?.id ?? null,
    previousCreatedAt: previous?.createdAt ?? null,
    regressions,
    notCompared,
    scenarios,
    settingsDifferences: previous ? settingsDifferences(previous.config, current.config) : [],
    spreadRuns: alike.length,
  };
}

/** Names people know for the recorded settings; anything else is shown by its key. */
const SETTING_LABELS: Record<string, string> = {
  'settings.strategies.update_status': 'status update strategy',
  'settings.strategies.reevaluate': 'correction strategy',
  'settings.strategies.bulk_update_status': 'bulk update strategy',
  'settings.lockTimeoutMs': 'lock timeout (ms)',
  'settings.retry.maxAttempts': 'retries',
  'settings.retry.baseMs': 'retry base (ms)',
  'settings.retry.factor': 'retry factor',
  'settings.retry.jitterMs': 'retry jitter (ms)',
  'settings.retry.maxDelayMs': 'retry delay cap (ms)',
  'settings.deadlockMaxAttempts': 'deadlock attempts',
  'settings.poolSize': 'database pool',
  'settings.preparedStatements': 'prepared statements',
  'settings.contentionMemoryMs': 'adaptive: contended for (ms)',
  sizePreset: 'sizes',
  'runtime.postgres': 'PostgreSQL version',
  'runtime.cpus': 'CPUs',
  'runtime.host': 'host',
  'runtime.serverSettings.deadlock_timeout': 'deadlock_timeout',
  'runtime.serverSettings.synchronous_commit': 'synchronous_commit',
  'runtime.serverSettings.fsync': 'fsync',
  'runtime.serverSettings.max_connections': 'max_connections',
  'runtime.serverSettings.shared_buffers': 'shared_buffers',
};

/** Recorded but not a setting: which run chose a strategy, or the environment's name, change nothing measured. */
const NOT_SETTINGS = /^(strategyOverrides|settings\.environment|runtime\.node)(\.|$)/;

function flatten(value: unknown, prefix: string, into: Map<string, string>): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, into);
  } else if (prefix && !NOT_SETTINGS.test(prefix)) {
    into.set(prefix, value === undefined ? '—' : Array.isArray(value) ? value.join(', ') : String(value));
  }
  return into;
}

/**
 * What two runs did not share: the rollout's flags (strategies, lock timeout, retries, pool, prepared statements),
 * the sizes and targets they were judged against, and the database and machine they ran on. Runs that differ here
 * measure different things; their comparison is shown with a warning naming each difference.
 */
export function settingsDifferences(previous: RunConfig | null | undefined, current: RunConfig | null | undefined): SettingDifference[] {
  const a = flatten(previous ?? {}, '', new Map());
  const b = flatten(current ?? {}, '', new Map());
  const keys = [...new Set([...a.keys(), ...b.keys()])].sort();
  // Two named size presets differ in every size: the preset says it once.
  const presets = [a.get('sizePreset'), b.get('sizePreset')];
  const presetSaysIt = presets[0] !== presets[1] && !presets.includes('custom');
  return keys
    .filter((k) => (a.get(k) ?? '—') !== (b.get(k) ?? '—'))
    .filter((k) => !(presetSaysIt && k.startsWith('sizes.')))
    .map((key) => ({ key, label: SETTING_LABELS[key] ?? key.replace(/^(runtime\.serverSettings|settings|runtime)\./, '').replace(/^targets\./, 'target ').replace(/^sizes\./, 'size '), previous: a.get(key) ?? '—', current: b.get(key) ?? '—' }));
}

/** A check the run missed, or a scenario that broke: what a release engineer reads first. */
export type FailedCheck = { scenario: ScenarioName; title: string; label: string; actual: string; target: string; broke: boolean };

/** Every missed check and broken scenario of a run, in the run's order: the summary at the top of a run. */
export function failedChecks(results: readonly ScenarioResult[]): FailedCheck[] {
  return results.flatMap((r) => [
    ...(r.error ? [{ scenario: r.name, title: r.title, label: 'the scenario broke', actual: r.error, target: 'runs to the end', broke: true }] : []),
    ...r.checks.filter((c) => c.pass === false).map((c) => ({ scenario: r.name, title: r.title, label: c.label, actual: c.actual, target: c.target, broke: false })),
  ]);
}

/** A target a run was too small to judge: shown with its figure and why it was not judged. */
export type UnjudgedCheck = { scenario: ScenarioName; title: string; label: string; actual: string; target: string; why: string };

/** Every target of a run that was not judged (a smoke run), in the run's order. */
export function unjudgedChecks(results: readonly ScenarioResult[]): UnjudgedCheck[] {
  return results.flatMap((r) => r.checks.filter((c) => c.pass === null).map((c) => ({ scenario: r.name, title: r.title, label: c.label, actual: c.actual, target: c.target, why: c.notJudged ?? 'not judged' })));
}
