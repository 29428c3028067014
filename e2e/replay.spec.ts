import { expect, test } from './support/test';
import { ROLES, type Role } from '../lib/auth/permissions';
import { db } from '../lib/db/client';
import { createIntent } from '../lib/intents/commands';
import { startReplay } from '../lib/replay/runner';
import { unpinBaseline } from '../lib/replay/pinning';
import { finishRun } from '../lib/replay/runs';
import { SCENARIO_NAMES, type ScenarioName, type ScenarioResult } from '../lib/replay/types';
import { checksFor, verdictOf } from '../lib/replay/verdict';
import { mkdirSync } from 'node:fs';
import { apiTokenFor, useSessionOf } from './auth';

/**
 * The Replay page against a production build served with BRIDGE_ENV=development, as a release engineer would use
 * it: the missed checks first, a warning when the compared runs used different settings, the raw-SQL baseline as
 * context and noise-aware regressions (two recorded runs with known figures); the button and the API door for the
 * release role (admin too; every other role refused); a real run of every scenario in the background, listed, its
 * replay data kept out of the operators' intents. Small sizes: this checks the doors, the benchmark measures speed.
 */
test.describe.configure({ mode: 'serial' });

/** A scenario result with these figures, judged like a real one. */
function result(name: ScenarioName, measures: Record<string, number>): ScenarioResult {
  const targets = { throughputMinPerSec: 2000, baselineMinRatio: 0.6, lockAcquisitionP95MaxMs: 5, corrections50P95MaxMs: 150, deadlockRecoveryMeanMaxMs: 300, nowaitFailFastMaxMs: 100, regressionTolerance: 0.2 };
  const checks = checksFor(name, measures, targets);
  return {
    name, title: name === 'corrections-50' ? '50 concurrent corrections of one intent' : 'Status-update throughput, with the raw-SQL baseline', source: 'e2e',
    startedAt: new Date().toISOString(), durationMs: 1000, latency: null,
    outcomes: { calls: 0, succeeded: 0, alreadyApplied: 0, conflicts: 0, retries: 0, lockTimeouts: 0, deadlocks: 0, failed: {}, failedExamples: {}, engine: {} },
    measures, checks, verdict: verdictOf(checks), notes: [],
  };
}

/** A 4-second blocking of one of the run's own intents (a replay intent tagged with the run), begun while it runs, as the sampler writes it. */
async function recordEpisodeOnRunIntent(runId: string): Promise<string> {
  const intent = await createIntent({ payload: { replay: { run: runId, scenario: 'corrections-50', n: 0 } }, source: 'replay' }, { name: 'e2e-release' }, { isReplay: true });
  const root = { pid: 4242, applicationName: `bridge:reevaluate:${intent.id}`, operation: 'reevaluate', query: 'SELECT 1', intents: [intent.id] };
  const waiters = [4343, 4344, 4345].map((pid) => ({ pid, applicationName: `bridge:reevaluate:${intent.id}`, operation: 'reevaluate', query: 'SELECT 1', intents: [intent.id] }));
  const tree = { tree: [{ pid: 4242, waitingBehind: 2, children: [], hiddenChildren: 2 }], backends: [] };
  const [row] = await db().$queryRaw<{ id: bigint; startedAt: Date }[]>`
    INSERT INTO lock_episodes (root_pid, root_backend_start, root_xact_start, started_at, last_seen_at, ended_at, peak_waiters, peak_at, peak_tree, root, waiters, intent_ids, applications)
    VALUES (4242, now() - interval '1 hour', now() - interval '1 second', now(), now() + interval '4 seconds', now() + interval '4 seconds', 2, now() + interval '2 seconds',
            ${JSON.stringify(tree)}::jsonb, ${JSON.stringify(root)}::jsonb, ${JSON.stringify(waiters)}::jsonb, ARRAY[${intent.id}::uuid], ARRAY[${root.applicationName}])
    RETURNING id, started_at AS "startedAt"`;
  await db().$executeRaw`INSERT INTO lock_episode_intents (intent_id, episode_id, episode_started_at, role)
    VALUES (${intent.id}::uuid, ${row.id}, ${row.startedAt}, 'root'), (${intent.id}::uuid, ${row.id}, ${row.startedAt}, 'waiter')`;
  return String(row.id);
}

test('a release engineer reads the missed checks first, and is warned when the compared runs differ', async ({ page, context, baseURL }) => {
  const engineer = { name: 'e2e-release' };
  // The previous run: the configured strategies, every check met.
  const before = await startReplay({ scenarios: ['corrections-50', 'throughput'], size: 'full' }, 'cli', engineer, { environment: 'development' });
  const passed = [
    result('corrections-50', { calls: 50, succeeded: 50, versionIncrement: 50, historyCount: 50, auditCount: 50, p95Ms: 120 }),
    result('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 2600, baselinePerSec: 4200, baselineRatio: 0.62 }),
  ];
  await finishRun(before.id, { status: 'finished', verdict: 'pass', progress: { ...before.progress, done: 2 }, results: passed, error: null });
  // This run: corrections under the pessimistic strategy chosen for the run; their p95 misses its target. The
  // machine was slower (the raw-SQL baseline fell from 4,200 to 3,000 /s) and the engine's throughput with it.
  const after = await startReplay({ scenarios: ['corrections-50', 'throughput'], size: 'full', strategies: { reevaluate: 'pessimistic' } }, 'cli', engineer, { environment: 'development' });
  const missed = [
    result('corrections-50', { calls: 50, succeeded: 50, versionIncrement: 50, historyCount: 50, auditCount: 50, p95Ms: 210 }),
    result('throughput', { calls: 1000, succeeded: 1000, throughputPerSec: 2050, baselinePerSec: 3000, baselineRatio: 0.66 }),
  ];
  // A blocking the lock history recorded while it ran, on one of its intents: one episode it caused.
  const episodeId = await recordEpisodeOnRunIntent(after.id);
  await finishRun(after.id, { status: 'finished', verdict: 'fail', progress: { ...after.progress, done: 2 }, results: missed, error: null });

  await useSessionOf(context, baseURL!, ['release']);
  await page.goto(`/replay?run=${after.id}`);
  const detail = page.getByTestId('run-detail');
  await expect(detail).toHaveAttribute('data-run-id', after.id);
  const failed = page.getByTestId('run-failed-checks');
  await expect(failed).toHaveAttribute('data-count', '1');
  await expect(failed).toContainText('1 check missed');
  await expect(failed).toContainText('correction latency p95 — 210 ms (target < 150 ms)');
  const differ = page.getByTestId('run-settings-differ');
  await expect(differ).toContainText('Not like for like');
  await expect(differ).toContainText('correction strategy: adaptive → pessimistic');
  // The check that now fails, and its p95 beyond the tolerance: two regressions.
  await expect(page.getByTestId('run-comparison-summary')).toContainText('2 regressions');
  // The baseline's own drop is context; the engine's throughput fell with it, its share held: not a regression.
  const baseline = page.getByTestId('comparison-throughput-baselinePerSec');
  await expect(baseline).toContainText('context');
  await expect(baseline).not.toHaveAttribute('data-regression', 'true');
  await expect(page.getByTestId('comparison-throughput-throughputPerSec')).toContainText('the machine was slower');
  await expect(page.getByTestId('comparison-throughput-throughputPerSec')).not.toHaveAttribute('data-regression', 'true');
  await expect(page.getByTestId('comparison-corrections-50-p95Ms')).toHaveAttribute('data-regression', 'true');
  // Beside the verdicts, the lock episodes it caused, each opening on the Locks page.
  const episodes = page.getByTestId('run-lock-episodes');
  await expect(episodes).toContainText('Lock episodes it caused: 1');
  await expect(page.getByTestId(`run-episode-${episodeId}`)).toContainText('2 · 3');
  await expect(page.getByTestId(`run-episode-${episodeId}`).getByRole('link', { name: 'Open on Locks →' })).toHaveAttribute('href', `/locks?episode=${episodeId}`);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: 'test-results/screenshots/replay.png', fullPage: true });
});

/** A finished full-size lock-latency run (100 locks, p95 as given), recorded as the runner records one. */
async function lockLatencyRun(engineer: { name: string }, p95Ms: number): Promise<string> {
  const run = await startReplay({ scenarios: ['lock-latency'], size: 'full' }, 'cli', engineer, { environment: 'development' });
  const measures = { calls: 100, samples: 100, p50Ms: p95Ms / 2, p95Ms, p99Ms: p95Ms + 1 };
  const r = { ...result('lock-latency', measures), title: 'Uncontended lock acquisition' };
  r.latency = { count: 100, min: 0.1, mean: p95Ms / 2, p50: p95Ms / 2, p95: p95Ms, p99: p95Ms + 1, max: p95Ms + 2 };
  await finishRun(run.id, { status: 'finished', verdict: r.verdict, progress: { ...run.progress, done: 1 }, results: [r], error: null });
  return run.id;
}

test('a release engineer pins a baseline, sees a later run compared with it, picks another run, and finds it all in Audit', async ({ page, context, baseURL }) => {
  const engineer = { name: `e2e-pin-${Date.now().toString(36)}` };
  const base = await lockLatencyRun(engineer, 2);
  const previous = await lockLatencyRun(engineer, 2.1);
  const current = await lockLatencyRun(engineer, 9);
  const me = await useSessionOf(context, baseURL!, ['release']);
  try {
    // Without a pin: compared with the previous comparable run.
    await page.goto(`/replay?run=${current}`);
    const summary = page.getByTestId('run-comparison-summary');
    await expect(summary).toHaveAttribute('data-why', 'previous');
    await expect(summary).toHaveAttribute('data-compared-with', previous);

    // Pin the earlier run as the baseline, with a note.
    await page.goto(`/replay?run=${base}`);
    await expect(page.getByTestId('run-detail')).toHaveAttribute('data-run-id', base);
    await page.getByLabel('Why this run is the baseline (optional)').fill('release 4.2 accepted');
    await page.getByTestId('replay-pin').click();
    await expect(page.getByTestId('run-baseline')).toContainText('pinned baseline');
    await expect(page.getByTestId('replay-unpin')).toBeVisible();

    // The later run is now compared with the pinned baseline: its p95 regressed beyond the noise.
    await page.goto(`/replay?run=${current}`);
    await expect(summary).toHaveAttribute('data-why', 'pinned');
    await expect(summary).toHaveAttribute('data-compared-with', base);
    await expect(summary).toContainText(`Compared with the pinned baseline: run ${base.slice(0, 8)}`);
    await expect(summary).toContainText('release 4.2 accepted');
    await expect(summary).toContainText('regressions');
    // The p99 of 100 samples is one of the slowest two: shown, not compared.
    await expect(page.getByTestId('run-not-compared')).toContainText('1 figure not compared');
    // The figures (open: there are regressions) show each row's reason.
    await expect(page.getByTestId('comparison-lock-latency-p95Ms')).toHaveAttribute('data-regression', 'true');
    await expect(page.getByTestId('comparison-lock-latency-p99Ms')).toContainText('not enough samples to compare');
    await expect(page.getByTestId('replay-runs').getByRole('row').filter({ hasText: 'baseline' })).toHaveCount(1);
    await page.evaluate(() => window.scrollTo(0, 0));
    mkdirSync('test-results/screenshots', { recursive: true });
    await page.screenshot({ path: 'test-results/screenshots/replay-pinned-baseline.png', fullPage: true });

    // Any earlier run of its scenarios may be picked instead; the choice is in the URL.
    await page.getByTestId('compare-with').selectOption(previous);
    await expect(summary).toHaveAttribute('data-why', 'chosen');
    await expect(summary).toHaveAttribute('data-compared-with', previous);
    await expect(page).toHaveURL(new RegExp(`against=${previous}`));

    // In Audit: the runs' starts and finishes and the pin, each filterable like any other action.
    await page.goto(`/audit?actor=${engineer.name}`);
    await expect(page.getByTestId('audit-row').filter({ hasText: `run ${current.slice(0, 8)}` })).toHaveCount(2);
    await page.goto('/audit');
    await page.getByLabel('Action').selectOption('replay_baseline_pinned');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect(page).toHaveURL(/action=replay_baseline_pinned/);
    const pinned = page.getByTestId('audit-row').filter({ hasText: `run ${base.slice(0, 8)} is the baseline` });
    await expect(pinned).toContainText(me.username);
    await expect(pinned).toContainText('release 4.2 accepted');
    await expect(pinned.getByRole('link', { name: 'open run' })).toHaveAttribute('href', `/replay?run=${base}`);
    await page.goto(`/audit?action=replay_finished&actor=${engineer.name}`);
    await expect(page.getByTestId('audit-row').filter({ hasText: `run ${current.slice(0, 8)} · finished · verdict fail · 1 check missed` })).toHaveCount(1);
  } finally {
    // Leave no baseline behind for the other tests' runs.
    await unpinBaseline(base, 'e2e');
  }
});

test('the release role and admin start and cancel runs over the API; every other role is refused, naming the roles that may', async ({ request }) => {
  test.setTimeout(120_000);
  for (const role of ROLES) {
    const { authorization } = await apiTokenFor([role]);
    const start = await request.post('/api/replay/runs', { headers: { authorization }, data: { scenarios: ['lock-latency'], size: 'small' } });
    if (role === 'release' || role === 'admin') {
      expect(start.status(), role).toBe(202);
      const { run } = await start.json();
      expect(start.headers().location).toBe(`/api/console/replay/runs/${run.id}`);
      // One run at a time: a second start is refused while it goes (if it has not finished already).
      const again = await request.post('/api/replay/runs', { headers: { authorization }, data: { scenarios: ['lock-latency'], size: 'small' } });
      expect([202, 409], role).toContain(again.status());
      const runs = [run.id, ...(again.status() === 202 ? [(await again.json()).run.id] : [])];
      for (const id of runs) {
        await request.post(`/api/replay/runs/${id}/cancel`, { headers: { authorization } });
        await expect
          .poll(async () => (await (await request.get(`/api/console/replay/runs/${id}`, { headers: { authorization } })).json()).run.status, { timeout: 60_000 })
          .not.toBe('running');
      }
      // Cancelling a run that has ended is refused, naming why.
      const late = await request.post(`/api/replay/runs/${run.id}/cancel`, { headers: { authorization } });
      expect(late.status(), role).toBe(409);
      expect((await late.json()).error).toMatchObject({ code: 'replay_not_running', details: { status: expect.any(String) } });
      // A run that does not exist is not found; a body this call does not take is refused, naming it.
      const unknown = await request.post('/api/replay/runs/00000000-0000-4000-8000-000000000000/cancel', { headers: { authorization } });
      expect(unknown.status(), role).toBe(404);
      const withBody = await request.post(`/api/replay/runs/${run.id}/cancel`, { headers: { authorization }, data: { reason: 'not a field' } });
      expect(withBody.status(), role).toBe(400);
      expect((await withBody.json()).error.details.fields[0].field).toBe('body');
      // Bad input names the field.
      const bad = await request.post('/api/replay/runs', { headers: { authorization }, data: { scenarios: ['no-such-scenario'] } });
      expect(bad.status()).toBe(400);
      expect((await bad.json()).error.details.fields[0].field).toMatch(/^scenarios/);
    } else {
      expect(start.status(), role).toBe(403);
      const { error } = await start.json();
      expect(error.message, role).toContain('needs one of the admin or release roles');
    }
  }
});

test('pressing the replay button runs every scenario in the background and shows a finished run with verdicts', async ({ page, context, baseURL, request }) => {
  test.setTimeout(240_000);
  await useSessionOf(context, baseURL!, ['release']);
  await page.goto('/replay');
  await expect(page.getByRole('heading', { name: 'Replay', level: 1 })).toBeVisible();
  // The flags in force are on the page.
  await expect(page.getByTestId('replay-flags')).toContainText('status change strategy');
  await expect(page.getByTestId('replay-flags')).toContainText('pessimistic');
  await expect(page.getByTestId('replay-targets')).toContainText('≥ 2000 /s');

  await page.getByLabel('Size').selectOption('small');
  const start = page.getByTestId('replay-start');
  await expect(start).toBeEnabled();
  await start.click();

  // The new run is selected (and its id put in the URL, so the view can be shared).
  await expect(page).toHaveURL(/run=[0-9a-f-]{36}/);
  const runId = new URL(page.url()).searchParams.get('run')!;
  const detail = page.getByTestId('run-detail');
  await expect(detail).toHaveAttribute('data-run-id', runId);
  // While it runs, the button is disabled with the reason: one run at a time.
  if ((await detail.getAttribute('data-status')) === 'running') {
    await expect(start).toBeDisabled();
    await expect(page.getByTestId('replay-disabled-reason')).toContainText('A run is in progress');
  }

  await expect(detail).toHaveAttribute('data-status', 'finished', { timeout: 180_000 });
  await expect(page.getByTestId('run-status')).toHaveText('finished');
  // Small: the timing targets are set for full-size runs, so this is a smoke run — figures shown, not judged.
  await expect(page.getByTestId('run-verdict')).toHaveText(/^(smoke|fail)$/);
  for (const name of SCENARIO_NAMES) {
    await expect(page.getByTestId(`scenario-verdict-${name}`), name).toHaveText(/^(pass|fail|smoke)$/);
  }
  await expect(page.getByTestId('run-unjudged')).toContainText('too small to judge: needs ≥ 1000 status updates, 100 in flight (this run: 60, 20 in flight)');
  await expect(page.getByTestId('scenario-verdict-throughput')).not.toHaveText('fail');
  // The correctness scenarios do not depend on the machine's speed: they must pass.
  for (const name of ['status-race', 'corrections-3', 'identical-transitions', 'sorted-bulk']) {
    await expect(page.getByTestId(`scenario-verdict-${name}`), name).toHaveText('pass');
  }
  // NOWAIT and the deadlock also carry timing targets (fail fast, recover fast) a loaded machine can miss; their
  // correctness checks must hold whatever the load.
  for (const [name, check] of [
    ['nowait-executions', 'exactly one execution runs per round'],
    ['crossing-deadlock', 'a deadlock is detected in every round'],
    ['crossing-deadlock', 'both transactions of every round commit'],
  ]) {
    await expect(page.getByTestId(`scenario-${name}`).getByRole('listitem').filter({ hasText: check }).getByLabel('met'), `${name}: ${check}`).toBeVisible();
  }
  await expect(page.getByTestId('scenario-throughput')).toContainText('raw-SQL baseline');
  await expect(page.getByTestId('run-comparison-summary')).toBeVisible();
  await expect(page.getByTestId('replay-runs')).toContainText('console');
  await expect(start).toBeEnabled();
  await expect(page.getByTestId('run-failed-checks')).toBeVisible();

  // Replay intents never show among the operators' intents unless asked for.
  const { authorization } = await apiTokenFor(['viewer']);
  const listed = await (await request.get('/api/intents?limit=200', { headers: { authorization } })).json();
  expect(listed.items.filter((i: { isReplay: boolean }) => i.isReplay)).toEqual([]);
  const withReplay = await (await request.get('/api/intents?limit=200&includeReplay=true', { headers: { authorization } })).json();
  expect(withReplay.items.some((i: { isReplay: boolean }) => i.isReplay)).toBe(true);
});

test('without the release or admin role the button is disabled and says why, for every such role', async ({ browser, baseURL }) => {
  for (const role of ROLES.filter((r): r is Role => r !== 'release' && r !== 'admin')) {
    const context = await browser.newContext({ baseURL });
    try {
      const page = await context.newPage();
      await signIn(context, baseURL!, [role]);
      await page.goto('/replay');
      await expect(page.getByRole('heading', { name: 'Replay', level: 1 })).toBeVisible();
      await expect(page.getByTestId('replay-start'), role).toBeDisabled();
      await expect(page.getByTestId('replay-disabled-reason'), role).toContainText('Starting a contention replay needs one of the admin or release roles');
    } finally {
      await context.close();
    }
  }
});

// Not a React hook (a Playwright helper that plants a session cookie): named so the hooks lint rule lets a loop call it.
const signIn = useSessionOf;

test('a link to a run that is not there says so, instead of quietly showing another run', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/replay?run=deadbeef');
  await expect(page.getByTestId('replay-link-problem')).toHaveText('The link’s run “deadbeef” is not shown: no replay run has that id. The latest run is shown instead.');
  await page.goto('/replay?run=not-an-id');
  await expect(page.getByTestId('replay-link-problem')).toContainText('it is not a run id');
});
