import { expect, test } from '@playwright/test';
import { SCENARIO_NAMES } from '../lib/replay/types';
import { apiTokenFor, useSessionOf } from './auth';

/**
 * The Replay page against a production build served with BRIDGE_ENV=development: a release engineer (admin) presses
 * the button, watches the run go, and sees every scenario's verdict; the run is listed and its replay data stays
 * out of the operators' intents. Small sizes: this checks the door, the benchmark measures the speed.
 */
test('pressing the replay button runs every scenario in the background and shows a finished run with verdicts', async ({ page, context, baseURL, request }) => {
  test.setTimeout(240_000);
  await useSessionOf(context, baseURL!, ['admin']);
  await page.goto('/replay');
  await expect(page.getByRole('heading', { name: 'Replay', level: 1 })).toBeVisible();
  // The flags in force are on the page.
  await expect(page.getByTestId('replay-flags')).toContainText('strategy · update_status');
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
  await expect(page.getByTestId('run-verdict')).toHaveText(/^(pass|fail)$/);
  for (const name of SCENARIO_NAMES) {
    await expect(page.getByTestId(`scenario-verdict-${name}`), name).toHaveText(/^(pass|fail)$/);
  }
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
  await page.screenshot({ path: 'e2e/screenshots/replay.png', fullPage: true });

  // Replay intents never show among the operators' intents unless asked for.
  const { authorization } = await apiTokenFor(['viewer']);
  const listed = await (await request.get('/api/intents?limit=200', { headers: { authorization } })).json();
  expect(listed.items.filter((i: { isReplay: boolean }) => i.isReplay)).toEqual([]);
  const withReplay = await (await request.get('/api/intents?limit=200&includeReplay=true', { headers: { authorization } })).json();
  expect(withReplay.items.some((i: { isReplay: boolean }) => i.isReplay)).toBe(true);
});

test('without the replay.run permission the button is disabled and says why', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer', 'operator']);
  await page.goto('/replay');
  await expect(page.getByRole('heading', { name: 'Replay', level: 1 })).toBeVisible();
  await expect(page.getByTestId('replay-start')).toBeDisabled();
  await expect(page.getByTestId('replay-disabled-reason')).toContainText('needs the admin role');
});
