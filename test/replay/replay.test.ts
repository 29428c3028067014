import type { AuthActor } from '@/lib/auth/types';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { listIntents, countIntentsByStatus } from '@/lib/intents/queries';
import { ReplayDisabledError, ReplayInProgressError, ReplayNotRunningError } from '@/lib/replay/errors';
import { runWithComparison } from '@/lib/replay/compare';
import { cancelReplay, cancelReplayForUser, executeReplay, replayAllowed, runReplay, startReplay, startReplayForUser } from '@/lib/replay/runner';
import { getRun, listRuns } from '@/lib/replay/runs';
import { summarizeRun } from '@/lib/replay/summary';
import { SCENARIO_NAMES, type ScenarioResult } from '@/lib/replay/types';
import { contentionReport } from '@/lib/contention/queries';
import { reevaluateIntent } from '@/lib/intents/commands';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { readPersistedMetrics } from '@/lib/metrics/registry';
import { makeIntent, resetDatabase, untyped } from '../helpers';
import { closeSession, session, waitForWaiters, type Session } from '../barriers';
import { eventually } from '../wait';
import { apiRoute } from '@/lib/http/api-router';

/**
 * The scenario engine at small sizes, on the real database. Speed is the benchmark's business: here the timing
 * targets are relaxed (configurable thresholds) and only the correctness checks decide.
 */
const relaxed = {
  throughputMinPerSec: 0.001,
  baselineMinRatio: 0.0001,
  lockAcquisitionP95MaxMs: 60_000,
  corrections50P95MaxMs: 60_000,
  deadlockRecoveryMeanMaxMs: 60_000,
  nowaitFailFastMaxMs: 60_000,
};
const releaseEngineer = { name: 'release-engineer' };

async function resetReplay() {
  await resetDatabase();
  await db().$executeRaw`TRUNCATE replay_runs`;
}

const scenario = (results: ScenarioResult[], name: string) => results.find((r) => r.name === name)!;

/** Postgres' own count of the deadlocks in this database. */
async function deadlockCounter(): Promise<bigint> {
  const [{ deadlocks }] = await db().$queryRaw<{ deadlocks: bigint }[]>`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`;
  return deadlocks;
}

/**
 * One real deadlock, between two plain sessions and not the engine: each holds an advisory lock, then asks for the
 * other's. The second asks only once the first is seen waiting, so the cycle closes every time.
 */
async function deadlockBetweenTwoSessions(): Promise<void> {
  const a = await session('bridge-test:deadlock-a');
  const b = await session('bridge-test:deadlock-b');
  const take = (s: Session, n: number) =>
    s.query(`SELECT pg_advisory_xact_lock(hashtext('bridge-test:replay-deadlock'), $1)`, [n]).then(
      () => 'locked',
      (err: { code?: string }) => err.code,
    );
  try {
    await a.query('BEGIN');
    await b.query('BEGIN');
    await take(a, 1);
    await take(b, 2);
    const aWantsTwo = take(a, 2);
    await waitForWaiters(1, { pids: [a.pid] });
    const outcomes = await Promise.all([aWantsTwo, take(b, 1)]);
    expect(outcomes.sort()).toEqual(['40P01', 'locked']);
  } finally {
    await closeSession(a);
    await closeSession(b);
  }
}

describe('contention replay', () => {
  beforeEach(resetReplay);
  // Runs outlive TRUNCATE intents: one a test left running (the running-run deadlock case leaves its own) would make
  // every replay start of the next file in this worker refuse with "in progress".
  afterAll(resetReplay);

  it('runs every scenario on its own replay intents, counts outcomes and judges them', async () => {
    const progress: number[] = [];
    const run = await runReplay({ scenarios: 'all', size: 'small', targets: relaxed }, 'cli', releaseEngineer, {
      environment: 'development',
      onProgress: (p) => progress.push(p.done),
    });
    expect(run.status).toBe('finished');
    expect(run.results.map((r) => r.name)).toEqual([...SCENARIO_NAMES]);
    for (const r of run.results) {
      expect(r.error, `${r.name}: ${r.error}`).toBeUndefined();
      expect(r.checks.length, r.name).toBeGreaterThan(0);
      expect(r.checks.filter((c) => c.pass === false), r.name).toEqual([]);
      expect(r.latency?.count, r.name).toBeGreaterThan(0);
    }
    // Small: the correctness checks are judged, the timing targets (set for full-size runs) are shown, not judged.
    expect(run.verdict).toBe('smoke');
    expect(scenario(run.results, 'status-race').verdict).toBe('pass');
    expect(scenario(run.results, 'throughput').checks.find((c) => c.id === 'throughput')).toMatchObject({ pass: null, notJudged: expect.stringContaining('needs ≥ 1000 status updates') });
    expect(Math.max(...progress)).toBe(SCENARIO_NAMES.length);

    // Outcomes counted as the callers and the engine saw them.
    const identical = scenario(run.results, 'identical-transitions');
    expect(identical.outcomes).toMatchObject({ calls: 10, succeeded: 10, alreadyApplied: 8 });
    const nowait = scenario(run.results, 'nowait-executions');
    expect(nowait.outcomes).toMatchObject({ calls: 4, succeeded: 2, lockTimeouts: 2 });
    const deadlock = scenario(run.results, 'crossing-deadlock');
    expect(deadlock.outcomes.deadlocks).toBeGreaterThanOrEqual(2);
    expect(deadlock.outcomes.retries).toBeGreaterThanOrEqual(2);
    expect(scenario(run.results, 'sorted-bulk').outcomes).toMatchObject({ deadlocks: 0, lockTimeouts: 0 });
    const race = scenario(run.results, 'status-race');
    expect(race.outcomes.calls).toBe(6);
    expect(race.outcomes.succeeded + (race.outcomes.failed.invalid_transition ?? 0)).toBe(6);
    const tp = scenario(run.results, 'throughput').measures;
    expect(tp.throughputPerSec).toBeGreaterThan(0);
    expect(tp.baselinePerSec).toBeGreaterThan(0);
    expect(tp.baselineFailures).toBe(0);

    // Persisted with who, where, the settings in force and the results.
    const stored = (await getRun(run.id))!;
    expect(stored).toMatchObject({ status: 'finished', verdict: 'smoke', door: 'cli', requestedBy: 'release-engineer', environment: 'development' });
    expect(stored.config.settings).toMatchObject({ strategies: { update_status: 'pessimistic', reevaluate: 'adaptive' }, lockTimeoutMs: 5000 });
    expect(stored.config.targets.throughputMinPerSec).toBe(0.001);
    expect(stored.config.runtime.serverSettings.deadlock_timeout).toBe('100ms');
    expect(stored.results).toEqual(JSON.parse(JSON.stringify(run.results)));
    expect(stored.finishedAt).not.toBeNull();

    // Replay data never shows among the operators' intents unless asked for.
    const visible = await listIntents({ limit: 200 });
    expect(visible.items).toEqual([]);
    expect(Object.values(await countIntentsByStatus()).reduce((a, b) => a + b, 0)).toBe(0);
    const withReplay = await listIntents({ limit: 200, includeReplay: 'true' });
    expect(withReplay.items.length).toBeGreaterThan(50);
    expect(withReplay.items.every((i) => i.isReplay)).toBe(true);
  });

  it('judges against the configured thresholds: the same figures fail the default targets', async () => {
    // 40 locks: enough for the p95 to be judged.
    const run = await runReplay({ scenarios: ['lock-latency'], size: 'small', sizes: { lockLatencyIntents: 40 }, targets: { lockAcquisitionP95MaxMs: 0.001 } }, 'cli', releaseEngineer, { environment: 'staging' });
    expect(run.verdict).toBe('fail');
    expect(run.results[0].checks[0]).toMatchObject({ id: 'p95', pass: false, target: '< 0 ms' });
  });

  it('compares a run with the previous finished one', async () => {
    const first = await runReplay({ scenarios: ['identical-transitions'], size: 'small', targets: relaxed }, 'cli', releaseEngineer, { environment: 'development' });
    const second = await runReplay({ scenarios: ['identical-transitions', 'lock-latency'], size: 'small', targets: relaxed }, 'cli', releaseEngineer, { environment: 'development' });
    const none = await runWithComparison(first.id);
    expect(none!.previous).toBeNull();
    const cmp = (await runWithComparison(second.id))!;
    expect(cmp.previous?.id).toBe(first.id);
    expect(cmp.comparison.previousRunId).toBe(first.id);
    expect(cmp.comparison.scenarios.map((s) => [s.scenario, s.previousVerdict])).toEqual([
      ['identical-transitions', 'pass'],
      ['lock-latency', null],
    ]);
    expect((await listRuns()).map((r) => r.id)).toEqual([second.id, first.id]);
    // Same settings: like for like, and relaxed targets mean nothing missed.
    expect(cmp.comparison.settingsDifferences).toEqual([]);
    expect(cmp.failedChecks).toEqual([]);
  });

  it('warns when the compared runs used different settings, and lists the checks a run missed first', async () => {
    const sizes = { lockLatencyIntents: 40 };
    const first = await runReplay({ scenarios: ['lock-latency'], size: 'small', sizes, targets: relaxed }, 'cli', releaseEngineer, { environment: 'development' });
    const second = await runReplay(
      { scenarios: ['lock-latency'], size: 'small', sizes, targets: { ...relaxed, lockAcquisitionP95MaxMs: 0.000001 }, strategies: { reevaluate: 'pessimistic' } },
      'cli',
      releaseEngineer,
      { environment: 'development' },
    );
    const cmp = (await runWithComparison(second.id))!;
    expect(cmp.previous?.id).toBe(first.id);
    expect(cmp.comparison.settingsDifferences).toEqual(
      expect.arrayContaining([
        { key: 'settings.strategies.reevaluate', label: 'correction strategy', previous: 'adaptive', current: 'pessimistic' },
        { key: 'targets.lockAcquisitionP95MaxMs', label: 'target lockAcquisitionP95MaxMs', previous: '60000', current: '0.000001' },
      ]),
    );
    expect(cmp.failedChecks).toEqual([expect.objectContaining({ scenario: 'lock-latency', label: 'uncontended lock, take and release, p95', target: '< 0 ms', broke: false })]);
  });

  it('starts and cancels only for a person who may, at the domain function both doors call', async () => {
    const viewer: AuthActor = { name: 'v', userId: 'x', roles: ['viewer'], via: 'token', credentialId: 'test', mustChangePassword: false };
    await expect(startReplayForUser(viewer, { scenarios: ['lock-latency'], size: 'small' }, 'api')).rejects.toMatchObject({ code: 'forbidden', httpStatus: 403 });
    await expect(cancelReplayForUser(viewer, '00000000-0000-0000-0000-000000000000')).rejects.toMatchObject({ code: 'forbidden' });
    const release: AuthActor = { ...viewer, roles: ['release'] };
    // Only what the page offers: sizes and targets are the CLI's.
    await expect(startReplayForUser(release, { scenarios: ['lock-latency'], targets: { throughputMinPerSec: 1 } }, 'console')).rejects.toMatchObject({
      code: 'invalid_request',
      details: { fields: [{ field: 'targets' }] },
    });
    await expect(cancelReplayForUser(release, 'nope')).rejects.toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'runId' }] } });
    expect(await listRuns()).toEqual([]);
  });

  it('records the door a run was started from: the API as api, the page as console', async () => {
    const { POST: postRun } = apiRoute('/api/replay/runs');
    const { apiRequest, resetAuth, userWithToken } = await import('../auth-helpers');
    await resetAuth();
    const { token } = await userWithToken(['release']);
    const res = await postRun(apiRequest('/api/replay/runs', { method: 'POST', token, body: { scenarios: ['lock-latency'], size: 'small' } }), undefined);
    expect(res.status).toBe(202);
    const { run } = (await res.json()) as { run: { id: string; door: string } };
    expect(run.door).toBe('api');
    await cancelReplay(run.id, releaseEngineer).catch(() => undefined);
    // The run goes on in this process' background: wait for its row to be closed before the next test resets.
    await eventually(`replay run ${run.id} to close`, async () => (await getRun(run.id))?.status !== 'running', { everyMs: 50 });
    expect((await getRun(run.id))?.door).toBe('api');
  });

  it('refuses in production, at the domain door every other door goes through, and records nothing', async () => {
    expect(replayAllowed('production')).toMatchObject({ allowed: false });
    expect(replayAllowed('production').reason).toMatch(/disabled in production/);
    expect(replayAllowed('staging')).toEqual({ allowed: true, reason: null });
    expect(replayAllowed('development').allowed).toBe(true);
    await expect(startReplay({ scenarios: 'all' }, 'console', releaseEngineer, { environment: 'production' })).rejects.toBeInstanceOf(ReplayDisabledError);
    await expect(runReplay({ scenarios: 'all' }, 'cli', releaseEngineer, { environment: 'production' })).rejects.toMatchObject({ code: 'replay_disabled', httpStatus: 403 });
    expect(await listRuns()).toEqual([]);
  });

  it('allows one run at a time across the database, and a dead runner does not block forever', async () => {
    const running = await startReplay({ scenarios: ['lock-latency'], size: 'small' }, 'console', releaseEngineer, { environment: 'development' });
    const refused = await startReplay({ scenarios: ['lock-latency'] }, 'cli', { name: 'someone-else' }, { environment: 'development' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ReplayInProgressError);
    // Which run, by whom, when: in the words and time format of the rest of the console.
    expect((refused as Error).message).toMatch(
      new RegExp(`^A replay run is already in progress: run ${running.id.slice(0, 8)}, started by ${releaseEngineer.name} from the console at \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\.`),
    );
    // Concurrent starts: the partial unique index lets exactly one through.
    await db().$executeRaw`UPDATE replay_runs SET status = 'finished', finished_at = now() WHERE id = ${running.id}::uuid`;
    const attempts = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) => startReplay({ scenarios: ['lock-latency'], size: 'small' }, 'cli', { name: `racer-${i}` }, { environment: 'development' })),
    );
    expect(attempts.filter((a) => a.status === 'fulfilled')).toHaveLength(1);
    expect(attempts.filter((a) => a.status === 'rejected').every((a) => (a as PromiseRejectedResult).reason instanceof ReplayInProgressError)).toBe(true);
    // Its process dies: no heartbeat for over a minute, and the next start marks it abandoned.
    await db().$executeRaw`UPDATE replay_runs SET heartbeat_at = now() - interval '2 minutes' WHERE status = 'running'`;
    const next = await startReplay({ scenarios: ['lock-latency'], size: 'small' }, 'cli', releaseEngineer, { environment: 'development' });
    const runs = await listRuns();
    expect(runs.find((r) => r.id === next.id)?.status).toBe('running');
    expect(runs.filter((r) => r.status === 'failed')).toHaveLength(1);
    expect(runs.find((r) => r.status === 'failed')?.error).toMatch(/abandoned/);
    await db().$executeRaw`UPDATE replay_runs SET status = 'cancelled' WHERE status = 'running'`;
  });

  it('cancels a run between steps and records what it finished', async () => {
    const run = await startReplay({ scenarios: ['identical-transitions', 'lock-latency', 'sorted-bulk'], size: 'small', targets: relaxed }, 'console', releaseEngineer, { environment: 'development' });
    let asked = false;
    const finished = await executeReplay(run, {
      onProgress: (p) => {
        if (p.done === 1 && !asked) {
          asked = true;
          void cancelReplay(run.id, { name: 'on-call' });
        }
      },
    });
    expect(finished.status).toBe('cancelled');
    expect(finished.verdict).toBeNull();
    expect(finished.cancelledBy).toBe('on-call');
    expect(finished.error).toBe('cancelled by on-call');
    expect(finished.results.length).toBeGreaterThanOrEqual(1);
    expect(finished.results.length).toBeLessThan(3);
    await expect(cancelReplay(run.id, { name: 'on-call' })).rejects.toBeInstanceOf(ReplayNotRunningError);
  });

  it('runs with a strategy chosen for the run, records it as such, and uses it for its own calls only', async () => {
    const run = await runReplay({ scenarios: ['corrections-3'], size: 'small', targets: relaxed, strategies: { reevaluate: 'pessimistic', update_status: 'pessimistic' } }, 'cli', releaseEngineer, {
      environment: 'development',
    });
    expect(run.verdict).toBe('pass');
    // update_status pessimistic is what is configured anyway: only the correction strategy is an override.
    expect(run.config.strategyOverrides).toEqual({ reevaluate: 'pessimistic' });
    expect(run.config.settings).toMatchObject({ strategies: { reevaluate: 'pessimistic', update_status: 'pessimistic' } });
    const corrections = scenario(run.results, 'corrections-3');
    // Locked corrections queue on the row: no version conflict, no retry.
    expect(corrections.outcomes).toMatchObject({ calls: 3, succeeded: 3, conflicts: 0, retries: 0 });
    expect(corrections.notes?.[0]).toMatch(/^strategy pessimistic/);
    const plain = await runReplay({ scenarios: ['corrections-3'], size: 'small', targets: relaxed }, 'cli', releaseEngineer, { environment: 'development' });
    expect(plain.config.strategyOverrides).toEqual({});
    expect(plain.config.settings).toMatchObject({ strategies: { reevaluate: 'adaptive' } });
    expect(summarizeRun((await listRuns()).find((r) => r.id === run.id)!)).toMatchObject({ strategyOverrides: ['reevaluate'], strategies: { reevaluate: 'pessimistic' } });
    await expect(startReplay({ strategies: untyped({ reevaluate: 'sometimes' }) }, 'cli', releaseEngineer, { environment: 'development' })).rejects.toMatchObject({
      code: 'invalid_request',
      details: { fields: [{ field: 'strategies.reevaluate', message: 'must be one of pessimistic, optimistic, adaptive' }] },
    });
    await expect(startReplay({ strategies: untyped({ audit_log: 'pessimistic' }) }, 'cli', releaseEngineer, { environment: 'development' })).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('keeps what it provokes out of the Contention page and the metrics, persisted apart as replay work', async () => {
    const live = await makeIntent('PROCESSED');
    await reevaluateIntent({ id: live.id, diff: { live: true }, source: 'svc', reason: 'real traffic' }, { name: 'svc' });
    const run = await runReplay({ scenarios: ['corrections-3', 'crossing-deadlock'], size: 'small', targets: relaxed }, 'cli', releaseEngineer, { environment: 'development' });
    expect(run.status).toBe('finished');
    expect(scenario(run.results, 'crossing-deadlock').outcomes.deadlocks).toBeGreaterThanOrEqual(2);
    await flushOutcomes();
    // The replay's own figures are persisted, marked as replay work…
    const [apart] = await db().$queryRaw<{ outcomes: number; deadlocks: number; waits: number }[]>`
      SELECT (SELECT coalesce(sum(count), 0)::int FROM outcome_counts WHERE is_replay) AS outcomes,
             (SELECT count(*)::int FROM deadlock_events WHERE is_replay) AS deadlocks,
             (SELECT coalesce(sum(count), 0)::int FROM lock_wait_buckets WHERE is_replay) AS waits`;
    expect(apart.outcomes).toBeGreaterThan(0);
    expect(apart.deadlocks).toBeGreaterThanOrEqual(2);
    expect(apart.waits).toBeGreaterThan(0);
    // …and what operators and alerts watch shows only the real correction.
    const report = await contentionReport({ window: '15m' });
    expect(report.totals).toEqual({ conflicts: 0, deadlocks: 0, lockTimeouts: 0, retries: 0, alreadyApplied: 0 });
    const metrics = await readPersistedMetrics();
    expect(metrics.deadlocks).toEqual({ detections: 0, retries: 0 });
    expect(metrics.outcomes.filter((o) => o.operation === 'reevaluate')).toEqual([{ operation: 'reevaluate', outcome: 'success', n: 1 }]);
    expect(metrics.outcomes.map((o) => o.operation)).not.toContain('replay_crossing_order');
    // Nothing a replay did is listed per intent: its intents are not the operators' to open.
    const [perIntent] = await db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM intent_outcome_minutes`;
    expect(perIntent.n).toBe(0);

    // Postgres' own counter cannot tell replay deadlocks apart: the run snapshotted it at its start and end (after
    // the counter caught up with the deadlocks the run met), and the page subtracts what the run added.
    expect(run.pgDeadlocks).toBeGreaterThanOrEqual(scenario(run.results, 'crossing-deadlock').outcomes.deadlocks);
    const pg = report.deadlocks.postgres;
    expect(pg.replay).toEqual({ deadlocks: run.pgDeadlocks, runs: 1, unmeasuredRuns: 0 });
    expect(pg.outsideReplay).toBe(Math.max(0, pg.total - run.pgDeadlocks!));
  });

  it('counts the replay deadlocks of a run still going, and says which runs it could not subtract', async () => {
    const start = await deadlockCounter();
    // A run still going, its start snapshot taken now: the deadlocks from here on are its own. One run from before
    // the snapshots existed, which cannot be subtracted.
    await db().$executeRaw`
      INSERT INTO replay_runs (id, status, door, requested_by, environment, scenarios, config, progress, runner, pg_deadlocks_start, pg_stats_reset_start)
      SELECT gen_random_uuid(), 'running', 'cli', 'x', 'development', '{}', '{}', '{}', 'test', ${start}, stats_reset
      FROM pg_stat_database WHERE datname = current_database()`;
    await db().$executeRaw`
      INSERT INTO replay_runs (id, status, door, requested_by, environment, scenarios, config, progress, runner, finished_at)
      VALUES (gen_random_uuid(), 'finished', 'cli', 'x', 'development', '{}', '{}', '{}', 'test', now())`;
    // Three real deadlocks while it runs. Postgres reports its counter to the statistics system asynchronously:
    // wait for it to count them.
    for (let i = 0; i < 3; i++) await deadlockBetweenTwoSessions();
    await eventually('Postgres to count the three deadlocks', async () => (await deadlockCounter()) >= start + 3n, { everyMs: 50 });
    const pg = (await contentionReport({ window: '15m' })).deadlocks.postgres;
    expect(pg.replay.runs).toBe(1);
    expect(pg.replay.unmeasuredRuns).toBe(1);
    expect(pg.replay.deadlocks).toBeGreaterThanOrEqual(3);
    expect(pg.outsideReplay).toBe(pg.total - pg.replay.deadlocks);
  });

  it('validates what a door asks for', async () => {
    await expect(startReplay({ scenarios: untyped(['no-such-scenario']) }, 'cli', releaseEngineer, { environment: 'development' })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(startReplay({ scenarios: [] }, 'cli', releaseEngineer, { environment: 'development' })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(startReplay({ size: untyped('huge') }, 'cli', releaseEngineer, { environment: 'development' })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(cancelReplay('not-a-uuid', releaseEngineer)).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await listRuns()).toEqual([]);
  });
});
