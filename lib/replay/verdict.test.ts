import { describe, expect, it } from 'vitest';
import { DEFAULT_TARGETS } from './targets';
import type { RunConfig, ScenarioResult } from './types';
import { SIZES } from './types';
import { checksFor, compareResults, compareRuns, failedChecks, runVerdict, settingsDifferences, unjudgedChecks, verdictOf } from './verdict';

const t = DEFAULT_TARGETS;

function result(name: ScenarioResult['name'], measures: Record<string, number>, targets = t): ScenarioResult {
  const checks = checksFor(name, measures, targets);
  return {
    name,
    title: name,
    source: 'test',
    startedAt: '2026-01-01T00:00:00.000Z',
    durationMs: 1,
    latency: null,
    outcomes: { calls: 0, succeeded: 0, alreadyApplied: 0, conflicts: 0, retries: 0, lockTimeouts: 0, deadlocks: 0, failed: {}, failedExamples: {}, engine: {} },
    measures,
    checks,
    verdict: verdictOf(checks),
    notes: [],
  };
}

describe('replay verdicts', () => {
  it('judges throughput on both the absolute target and the share of the baseline', () => {
    const ok = checksFor('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 2100, baselineRatio: 0.81 }, t);
    expect(verdictOf(ok)).toBe('pass');
    const slow = checksFor('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 1999, baselineRatio: 0.9 }, t);
    expect(slow.find((c) => c.id === 'throughput')).toMatchObject({ pass: false, actual: '1999 /s', target: '≥ 2000 /s' });
    expect(verdictOf(slow)).toBe('fail');
    const lowShare = checksFor('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 5000, baselineRatio: 0.79 }, t);
    expect(lowShare.find((c) => c.id === 'baseline-ratio')).toMatchObject({ pass: false, actual: '79 %' });
    // Just under the target: shown with the digit that tells it from the target, never as the target itself.
    const justUnder = checksFor('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 1999.6, baselineRatio: 0.797 }, t);
    expect(justUnder.find((c) => c.id === 'baseline-ratio')).toMatchObject({ pass: false, target: '≥ 80 %', actual: '79.7 %' });
    expect(justUnder.find((c) => c.id === 'throughput')).toMatchObject({ pass: false, target: '≥ 2000 /s', actual: '1999.6 /s' });
    const justOver = checksFor('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 2000.4, baselineRatio: 0.8 }, t);
    expect(justOver.find((c) => c.id === 'throughput')).toMatchObject({ pass: true, actual: '2000 /s' });
    const oneFailed = checksFor('throughput', { calls: 1000, succeeded: 999, throughputPerSec: 5000, baselineRatio: 0.9 }, t);
    expect(verdictOf(oneFailed)).toBe('fail');
  });

  it('demands every correction, a complete history and version +N, and p95 only for the big one', () => {
    const m = { calls: 50, succeeded: 50, versionIncrement: 50, historyCount: 50, auditCount: 50, p95Ms: 149.9 };
    expect(verdictOf(checksFor('corrections-50', m, t))).toBe('pass');
    expect(verdictOf(checksFor('corrections-50', { ...m, p95Ms: 150 }, t))).toBe('fail');
    expect(verdictOf(checksFor('corrections-50', { ...m, auditCount: 49 }, t))).toBe('fail');
    expect(verdictOf(checksFor('corrections-3', { calls: 3, succeeded: 3, versionIncrement: 3, historyCount: 3, auditCount: 3, p95Ms: 9999 }, t))).toBe('pass');
  });

  it('knows exactly one increment from more than one, and a missing measure from a good one', () => {
    const m = { intents: 5, calls: 100, succeeded: 100, alreadyApplied: 95, intentsWithOneIncrement: 5 };
    expect(verdictOf(checksFor('identical-transitions', m, t))).toBe('pass');
    expect(verdictOf(checksFor('identical-transitions', { ...m, intentsWithOneIncrement: 4 }, t))).toBe('fail');
    expect(verdictOf(checksFor('crossing-deadlock', { rounds: 5, deadlocks: 5, recoveredRounds: 5 }, t))).toBe('fail');
    expect(verdictOf(checksFor('crossing-deadlock', { rounds: 5, deadlocks: 5, recoveredRounds: 5, recoveryMeanMs: 210 }, t))).toBe('pass');
    expect(verdictOf(checksFor('crossing-deadlock', { rounds: 5, deadlocks: 0, recoveredRounds: 5, recoveryMeanMs: 1 }, t))).toBe('fail');
  });

  it('fails sorted bulk updates on a single deadlock or lock timeout', () => {
    const m = { calls: 10, succeeded: 10, deadlocks: 0, lockTimeouts: 0, intents: 5, consistentIntents: 5 };
    expect(verdictOf(checksFor('sorted-bulk', m, t))).toBe('pass');
    expect(verdictOf(checksFor('sorted-bulk', { ...m, deadlocks: 1 }, t))).toBe('fail');
    expect(verdictOf(checksFor('sorted-bulk', { ...m, lockTimeouts: 1 }, t))).toBe('fail');
  });

  it('follows configured thresholds', () => {
    const m = { samples: 100, p95Ms: 7 };
    expect(verdictOf(checksFor('lock-latency', m, t))).toBe('fail');
    expect(verdictOf(checksFor('lock-latency', m, { ...t, lockAcquisitionP95MaxMs: 8 }))).toBe('pass');
  });

  it('fails a broken scenario and an empty run', () => {
    expect(verdictOf([], undefined)).toBe('fail');
    expect(verdictOf([{ id: 'x', label: 'x', target: '', actual: '', pass: true }], 'boom')).toBe('fail');
    expect(runVerdict([])).toBe('fail');
  });
});

describe('run comparison', () => {
  it('flags a measure that got worse beyond tolerance and floor, and not noise', () => {
    const prev = [result('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 2500, baselineRatio: 0.7, p95Ms: 40 })];
    const cur = [result('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 1900, baselineRatio: 0.69, p95Ms: 41 })];
    const [cmp] = compareResults(cur, prev, 0.2);
    const row = (m: string) => cmp.rows.find((r) => r.measure === m)!;
    // The engine's share of the raw-SQL baseline held (70 → 69 %): the machine was slower, not the engine.
    expect(row('throughputPerSec')).toMatchObject({ previous: 2500, current: 1900, regression: false, note: expect.stringContaining('the machine was slower') });
    expect(row('throughputPerSec').change).toBeCloseTo(-0.24, 2);
    expect(row('baselineRatio').regression).toBe(false);
    expect(row('p95Ms').regression).toBe(false);
    expect(cmp.verdictRegression).toBe(true); // 1900 /s misses the 2000 /s target it met before
    expect(cmp.newlyFailing).toEqual(['status updates per second (1,000 intents, 100 at a time)']);

    // The same drop with the share falling too is the engine's.
    const engineSlower = [result('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 1900, baselineRatio: 0.5, p95Ms: 41 })];
    const [worse] = compareResults(engineSlower, prev, 0.2);
    expect(worse.rows.find((r) => r.measure === 'throughputPerSec')).toMatchObject({ regression: true, note: null });
    expect(worse.rows.find((r) => r.measure === 'baselineRatio')!.regression).toBe(true);
  });

  it('shows the raw-SQL baseline’s own figures as context, never as regressions', () => {
    const prev = [result('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 2500, baselinePerSec: 4000, baselineRatio: 0.62 })];
    const cur = [result('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 2500, baselinePerSec: 2000, baselineRatio: 0.62 })];
    const row = compareResults(cur, prev, 0.2)[0].rows.find((r) => r.measure === 'baselinePerSec')!;
    expect(row).toMatchObject({ context: true, regression: false, previous: 4000, current: 2000 });
    expect(row.note).toContain('machine');
  });

  it('calls a worse figure a regression only outside the run-to-run spread of runs with the same settings', () => {
    const prev = [result('lock-latency', { samples: 100, p95Ms: 2 })];
    const cur = [result('lock-latency', { samples: 100, p95Ms: 3.5 })];
    // Without history: 2 → 3.5 ms is beyond the 20 % and the 1 ms floor.
    expect(compareResults(cur, prev, 0.2)[0].rows[0].regression).toBe(true);
    // The last runs ranged 1.9–4 ms: 3.5 ms is within that spread.
    const history = [[result('lock-latency', { samples: 100, p95Ms: 2 })], [result('lock-latency', { samples: 100, p95Ms: 4 })], [result('lock-latency', { samples: 100, p95Ms: 1.9 })]];
    const within = compareResults(cur, prev, 0.2, history)[0].rows[0];
    expect(within).toMatchObject({ regression: false, spread: { min: 1.9, max: 4, runs: 3 } });
    expect(within.note).toContain('within the spread of the last 3 runs');
    // 4.5 ms is beyond it.
    expect(compareResults([result('lock-latency', { samples: 100, p95Ms: 4.5 })], prev, 0.2, history)[0].rows[0].regression).toBe(true);
  });

  it('names every setting two runs did not share, and takes the spread only from runs like this one', () => {
    const config = (over: Partial<{ reevaluate: string; lockTimeoutMs: number; host: string; preset: 'full' | 'small' }> = {}) =>
      ({
        settings: { environment: 'staging', lockTimeoutMs: over.lockTimeoutMs ?? 5000, strategies: { update_status: 'pessimistic', reevaluate: over.reevaluate ?? 'adaptive' }, poolSize: 10 },
        strategyOverrides: {},
        sizes: { manyCorrections: over.preset === 'small' ? 10 : 50 },
        sizePreset: over.preset ?? 'full',
        targets: DEFAULT_TARGETS,
        runtime: { node: 'v20', postgres: '18.1', host: over.host ?? 'ci-1', cpus: 2, serverSettings: { deadlock_timeout: '100ms' } },
      }) as unknown as RunConfig;
    expect(settingsDifferences(config(), config())).toEqual([]);
    expect(settingsDifferences(config(), config({ reevaluate: 'pessimistic', lockTimeoutMs: 200, preset: 'small' }))).toEqual([
      { key: 'settings.lockTimeoutMs', label: 'lock timeout (ms)', previous: '5000', current: '200' },
      { key: 'settings.strategies.reevaluate', label: 'correction strategy', previous: 'adaptive', current: 'pessimistic' },
      { key: 'sizePreset', label: 'sizes', previous: 'full', current: 'small' },
    ]);
    expect(settingsDifferences(config(), config({ host: 'laptop' })).map((d) => d.label)).toEqual(['host']);

    const run = (p95Ms: number, c = config()) => ({ config: c, results: [result('lock-latency', { samples: 100, p95Ms })] });
    const prev = { id: 'p', createdAt: '2026-01-01T00:00:00.000Z', ...run(2, config({ reevaluate: 'pessimistic' })) };
    const cmp = compareRuns(run(3.5), prev, 0.2, [run(4), run(1.9, config({ reevaluate: 'optimistic' })), run(2)]);
    expect(cmp.settingsDifferences.map((d) => d.label)).toEqual(['correction strategy']);
    expect(cmp.spreadRuns).toBe(2);
    expect(cmp.scenarios[0].rows[0].spread).toEqual({ min: 2, max: 4, runs: 2 });
  });

  it('lists the missed checks and broken scenarios of a run', () => {
    const slow = result('lock-latency', { samples: 100, p95Ms: 9 });
    const broken = { ...result('status-race', { intents: 1, intentsWithSuccess: 1, consistentIntents: 1 }), error: 'connection lost', verdict: 'fail' as const };
    expect(failedChecks([result('lock-latency', { samples: 100, p95Ms: 1 }), slow, broken])).toEqual([
      { scenario: 'lock-latency', title: 'lock-latency', label: 'uncontended lock, take and release, p95', actual: '9 ms', target: '< 5 ms', broke: false },
      { scenario: 'status-race', title: 'status-race', label: 'the scenario broke', actual: 'connection lost', target: 'runs to the end', broke: true },
    ]);
  });

  it('does not call tiny absolute changes regressions', () => {
    const prev = [result('lock-latency', { samples: 100, p95Ms: 1.2 })];
    const cur = [result('lock-latency', { samples: 100, p95Ms: 1.9 })];
    expect(compareResults(cur, prev, 0.2)[0].rows.find((r) => r.measure === 'p95Ms')!.regression).toBe(false);
    const worse = [result('lock-latency', { samples: 100, p95Ms: 4.9 })];
    expect(compareResults(worse, prev, 0.2)[0].rows.find((r) => r.measure === 'p95Ms')!.regression).toBe(true);
  });

  it('compares with nothing when there is no previous run, and counts regressions per run', () => {
    const cur = [result('lock-latency', { samples: 100, p95Ms: 1 })];
    const none = compareRuns({ results: cur }, null, 0.2);
    expect(none).toMatchObject({ previousRunId: null, regressions: 0 });
    expect(none.scenarios[0].previousVerdict).toBeNull();
    const prev = { id: 'p', createdAt: '2026-01-01T00:00:00.000Z', results: [result('lock-latency', { samples: 100, p95Ms: 1 })] };
    const worse = compareRuns({ results: [result('lock-latency', { samples: 100, p95Ms: 9 })] }, prev, 0.2);
    expect(worse.regressions).toBe(2); // the p95 measure, and the check that now fails
  });
});

describe('small runs: smoke, not judged', () => {
  const small = SIZES.small;
  it('shows a small run’s timing figures without judging them against full-size targets, and says what they need', () => {
    // 60 updates with 20 in flight at 609 /s: no verdict on a 2,000 /s target set for 1,000 updates, 100 in flight.
    const tp = result('throughput', { calls: small.throughputIntents, inFlight: small.throughputBatch, succeeded: 60, throughputPerSec: 609, baselinePerSec: 900, baselineRatio: 0.68 });
    const rate = tp.checks.find((c) => c.id === 'throughput')!;
    expect(rate).toMatchObject({ pass: null, actual: '609 /s', target: '≥ 2000 /s' });
    expect(rate.notJudged).toBe('too small to judge: needs ≥ 1000 status updates, 100 in flight (this run: 60, 20 in flight)');
    expect(tp.checks.find((c) => c.id === 'all-succeed')!.pass).toBe(true);
    expect(tp.verdict).toBe('smoke');

    const lock = result('lock-latency', { calls: 10, samples: 10, p95Ms: 9 });
    expect(lock.checks[0]).toMatchObject({ pass: null, notJudged: 'too small to judge: needs ≥ 40 locks (this run: 10)' });
    const corr = result('corrections-50', { calls: 10, succeeded: 10, versionIncrement: 10, historyCount: 10, auditCount: 10, p95Ms: 400 });
    expect(corr.checks.find((c) => c.id === 'p95')!.notJudged).toContain('needs ≥ 50 concurrent corrections (this run: 10)');
    expect(result('crossing-deadlock', { rounds: 2, deadlocks: 2, recoveredRounds: 2, recoveryMeanMs: 900 }).verdict).toBe('smoke');

    // A correctness check is judged at any size: a small run that loses a correction fails.
    expect(result('corrections-50', { calls: 10, succeeded: 9, versionIncrement: 9, historyCount: 9, auditCount: 9, p95Ms: 40 }).verdict).toBe('fail');
    expect(runVerdict([tp, lock])).toBe('smoke');
    expect(runVerdict([tp, result('lock-latency', { samples: 100, p95Ms: 9 })])).toBe('fail');
    expect(failedChecks([tp, lock])).toEqual([]);
    expect(unjudgedChecks([tp, lock]).map((u) => `${u.scenario}: ${u.label}`)).toEqual([
      'throughput: status updates per second (1,000 intents, 100 at a time)',
      'throughput: share of the raw-SQL baseline’s throughput (same transaction, pool and concurrency)',
      'lock-latency: uncontended lock, take and release, p95',
    ]);
  });

  it('judges a full-size run against the targets as before', () => {
    const full = SIZES.full;
    const tp = result('throughput', { calls: full.throughputIntents, inFlight: full.throughputBatch, succeeded: 1000, throughputPerSec: 1999, baselineRatio: 0.9 });
    expect(tp.checks.find((c) => c.id === 'throughput')).toMatchObject({ pass: false });
    expect(tp.checks.find((c) => c.id === 'throughput')).not.toHaveProperty('notJudged');
    expect(result('lock-latency', { samples: full.lockLatencyIntents, p95Ms: 4 }).verdict).toBe('pass');
  });
});

describe('regressions need enough samples', () => {
  /** A small run as the runner records it: every latency figure rests on a handful of calls. */
  const smallRun = (p: { race: number[]; lock: number[]; tp: number }) => [
    { ...result('status-race', { intents: 3, intentsWithSuccess: 3, consistentIntents: 3, samples: 6, p50Ms: p.race[0], p95Ms: p.race[1], p99Ms: p.race[2] }) },
    result('lock-latency', { calls: 10, samples: 10, p50Ms: p.lock[0], p95Ms: p.lock[1], p99Ms: p.lock[2] }),
    result('throughput', { calls: 60, inFlight: 20, succeeded: 60, throughputPerSec: p.tp, baselinePerSec: 900, baselineRatio: p.tp / 900 }),
  ];

  it('finds no regression between two identical small runs, however their few samples moved, and says why', () => {
    const first = smallRun({ race: [3, 5, 5], lock: [1, 2, 2], tp: 609 });
    // The same run again: the slowest of six calls doubled, the slowest lock tripled, throughput lost a third.
    const again = smallRun({ race: [6, 12, 12], lock: [1.5, 6.5, 6.5], tp: 400 });
    const cmp = compareRuns({ results: again }, { id: 'p', createdAt: '2026-01-01T00:00:00.000Z', results: first }, 0.2);
    expect(cmp.regressions).toBe(0);
    expect(cmp.notCompared).toBeGreaterThanOrEqual(8);
    const p95 = cmp.scenarios[0].rows.find((r) => r.measure === 'p95Ms')!;
    expect(p95).toMatchObject({ compared: false, regression: false, samples: { previous: 6, current: 6, needed: 40 } });
    expect(p95.note).toBe('not enough samples to compare: needs ≥ 40 samples in both runs (previous 6, this run 6)');
  });

  it('flags a real regression when both runs have enough samples, and not one within the noise', () => {
    const run = (p95: number, p50 = 2) => [result('lock-latency', { calls: 100, samples: 100, p50Ms: p50, p95Ms: p95, p99Ms: p95 + 1 })];
    const before = { id: 'p', createdAt: '2026-01-01T00:00:00.000Z', results: run(2.2) };
    const noise = compareRuns({ results: run(2.6) }, before, 0.2);
    expect(noise.regressions).toBe(0);
    const worse = compareRuns({ results: run(9) }, before, 0.2);
    const p95 = worse.scenarios[0].rows.find((r) => r.measure === 'p95Ms')!;
    expect(p95).toMatchObject({ compared: true, regression: true });
    // The p95 measure, and the check that passed and now misses its 5 ms target; the p99 rests on 100 samples (needs 200).
    expect(worse.regressions).toBe(2);
    expect(worse.scenarios[0].rows.find((r) => r.measure === 'p99Ms')).toMatchObject({ compared: false, regression: false });
  });

  it('compares a small run’s figures only with runs that have as many samples', () => {
    const full = { id: 'p', createdAt: '2026-01-01T00:00:00.000Z', results: [result('lock-latency', { calls: 100, samples: 100, p95Ms: 1 })] };
    const cmp = compareRuns({ results: [result('lock-latency', { calls: 10, samples: 10, p95Ms: 8 })] }, full, 0.2);
    expect(cmp.regressions).toBe(0);
    expect(cmp.scenarios[0].rows.find((r) => r.measure === 'p95Ms')!.note).toContain('(previous 100, this run 10)');
  });
});
