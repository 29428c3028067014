import { expect, test, type Page } from './support/test';
import { updateIntentStatus } from '../lib/intents/commands';
import { useSessionOf } from './auth';
import { screenshot, seedIntent, short, uniqueMarker } from './intents-fixtures';
import { db } from '../lib/db/client';
import { feedbackBridge, registerBridge } from '../lib/pipeline/bridges';
import { runPipeline } from '../lib/pipeline/run';
import { rescueStaleClaims } from '../lib/workers/repository';

/**
 * The pipeline and the Workers page against a production build (no worker runs in the browser tests: the queue
 * stays as the tests leave it). An operator runs the pipeline from the intent page and sees its steps; on the
 * Workers page pauses and resumes claiming (confirmed first) and sees the queue; a viewer cannot act.
 */
test('an operator runs the pipeline from the intent page and sees each step', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['operator']);
  const intent = await seedIntent('RECEIVED', { order: ` ${uniqueMarker('PIPE')} `, amount: 5 });
  await page.goto(`/intents/${intent.id}`);
  const panel = page.getByRole('region', { name: 'Pipeline runs' });
  await expect(panel.getByText('The pipeline has not run on this intent.')).toBeVisible();
  await panel.getByRole('button', { name: 'Run pipeline' }).click();
  await expect(panel.getByRole('status')).toHaveText('Run succeeded: the intent is COMPLETED.');
  for (const bridge of ['input', 'normalize', 'feedback', 'output']) await expect(panel.getByRole('cell', { name: bridge, exact: true })).toBeVisible();
  await expect(panel.getByRole('button', { name: 'Run pipeline' })).toHaveCount(0); // COMPLETED is terminal
  await screenshot(page, 'intent-pipeline');

  // The audit page tells the run in words: started, each step with its bridge, finished.
  await page.goto(`/audit?intent=${intent.id}`);
  const log = page.getByRole('table');
  await expect(log.getByRole('row').filter({ hasText: 'Pipeline run started' })).toContainText('round 1');
  await expect(log.getByRole('row').filter({ hasText: 'Pipeline step completed' }).filter({ hasText: 'normalize' })).toHaveCount(1);
  await expect(log.getByRole('row').filter({ hasText: 'Pipeline run finished' })).toContainText('succeeded');
  await expect(log.getByText(/^bridge_|^pipeline_/)).toHaveCount(0);
  await screenshot(page, 'audit-pipeline');
});

test('the Workers page: queue by state, pause and resume claiming with confirmation', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['operator']);
  const waiting = await seedIntent('RECEIVED', { order: uniqueMarker('QUEUE') });
  await page.goto('/workers');
  await expect(page.getByRole('heading', { name: 'Workers', level: 1 })).toBeVisible();
  await expect(page.getByLabel('Queue depth').getByText('ready', { exact: true })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'The BridgeSet' })).toBeVisible();

  await page.getByRole('button', { name: 'Pause claiming' }).click();
  const dialog = page.getByRole('dialog', { name: 'Pause claiming?' });
  await expect(dialog).toBeVisible();
  await dialog.getByRole('button', { name: 'Pause claiming' }).click();
  // One banner says so, naming who paused claiming and when; no second one repeats it.
  await expect(page.getByRole('status').filter({ hasText: /Claiming is paused for every worker \(by e2e-operator-/ })).toBeVisible();
  await expect(page.getByText(/Claiming is paused/)).toHaveCount(1);
  await screenshot(page, 'workers');

  await page.getByRole('button', { name: 'Resume claiming' }).click();
  await page.getByRole('dialog', { name: 'Resume claiming?' }).getByRole('button', { name: 'Resume claiming' }).click();
  await expect(page.getByText('Claiming resumed.', { exact: true })).toBeVisible();
  expect(short(waiting.id)).toHaveLength(8);
});

test('a viewer sees the Workers page but cannot act on it', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/workers');
  await expect(page.getByRole('button', { name: /claiming/ })).toBeDisabled();
});

test('the queue tiles fill their rows evenly at common widths: eight in one row or four in two', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/workers');
  const tiles = page.getByLabel('Queue depth').locator(':scope > div > div');
  await expect(tiles).toHaveCount(8);
  // Eight in a row, or four in two rows: never seven and one left alone below.
  for (const width of [1280, 1400, 1600, 1920]) {
    await page.setViewportSize({ width, height: 900 });
    const tops = await tiles.evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().top)));
    const perRow = [...new Set(tops)].map((top) => tops.filter((t) => t === top).length);
    expect(perRow.every((n) => n === perRow[0]) && [1, 2].includes(perRow.length), `tiles per row at ${width} px: ${perRow.join(' + ')}`).toBe(true);
  }
});

test('the throughput lines are each drawn their own way, so lines on the same pixels can be told apart', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/workers');
  // No worker runs in the browser tests, so every series is zero and all five lines lie on the same pixels: each
  // still needs a width and dash of its own to be told apart.
  const lines = page.getByTestId('workers-throughput').locator('path.recharts-line-curve');
  await expect(lines).toHaveCount(5);
  const looks = await lines.evaluateAll((paths) => paths.map((p) => `${p.getAttribute('stroke-width')} ${p.getAttribute('stroke-dasharray') ?? 'solid'}`));
  expect(new Set(looks).size, looks.join(' | ')).toBe(5);
});

/**
 * Seeds an intent the way a failed run leaves it: the pipeline ran here with a `feedback` bridge that fails (its
 * partner down), so input and normalize completed and the intent is FAILED at feedback. The server's own bridges
 * are the real ones: a rerun from feedback there runs the real feedback and output.
 */
async function failedAtFeedback(marker: string) {
  const intent = await seedIntent('RECEIVED', { order: ` ${marker} `, amount: 5, feedback: { amount: 6 } });
  registerBridge({ ...feedbackBridge, run: async () => Promise.reject(new Error('the feedback partner is down')) }, { replace: true });
  try {
    const { intent: after } = await runPipeline({ id: intent.id }, { name: 'e2e-seed' }, { door: 'console' });
    expect(after.status).toBe('FAILED');
  } finally {
    registerBridge(feedbackBridge, { replace: true });
  }
  return intent;
}

/** The intent page's "Rerun from a step…" dialog, opened with `bridge` chosen. */
async function openRerunFrom(page: Page, intentId: string, bridge: string) {
  await page.goto(`/intents/${intentId}`);
  const panel = page.getByRole('region', { name: 'Pipeline runs' });
  await panel.getByRole('button', { name: 'Rerun from a step…' }).click();
  const dialog = page.getByRole('dialog', { name: `Rerun intent ${short(intentId)} from a step` });
  await dialog.getByLabel('Start from bridge').selectOption(bridge);
  return { panel, dialog };
}

test('an operator reruns a FAILED intent from a chosen bridge: the plan first, then a new round', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['operator']);
  const intent = await failedAtFeedback(uniqueMarker('RERUN'));
  const { panel, dialog } = await openRerunFrom(page, intent.id, 'feedback');
  const plan = dialog.getByTestId('rerun-plan');
  await expect(plan.getByTestId('rerun-step-input')).toContainText('reused');
  await expect(plan.getByTestId('rerun-step-normalize')).toContainText('reused');
  await expect(plan.getByTestId('rerun-step-feedback')).toContainText('runs again');
  await expect(plan.getByTestId('rerun-step-feedback')).toContainText('evt.intent.corrected');
  await expect(plan.getByTestId('rerun-step-output')).toContainText('runs again');
  await expect(plan).toContainText('FAILED → RECEIVED → NORMALIZED → PROCESSED');
  await expect(plan).toContainText('Runs as round 2');
  // No reason, no rerun.
  await expect(dialog.getByRole('button', { name: 'Rerun from feedback' })).toBeDisabled();
  await dialog.getByLabel('Reason, kept in the audit (required)').fill('the feedback partner is back');
  await screenshot(page, 'rerun-plan');
  await dialog.getByRole('button', { name: 'Rerun from feedback' }).click();
  await expect(panel.getByRole('status')).toHaveText('Rerun from feedback: run succeeded (round 2); the intent is COMPLETED.');
  await expect(panel.getByText('of round 2, FAILFAST, console by')).toBeVisible();
  await expect(panel.getByText('replayed', { exact: true })).toHaveCount(2);
  await screenshot(page, 'rerun-done');

  await page.goto(`/audit?intent=${intent.id}`);
  const started = page.getByRole('table').getByRole('row').filter({ hasText: 'Pipeline run started' }).filter({ hasText: 'rerun from feedback' });
  await expect(started).toContainText('round 2');
  await expect(started).toContainText('the feedback partner is back');
});

test('a rerun the intent’s latest change made impossible is not offered, and what was typed stays', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['operator']);
  const intent = await failedAtFeedback(uniqueMarker('RERUN-STALE'));
  const { dialog } = await openRerunFrom(page, intent.id, 'feedback');
  await expect(dialog.getByTestId('rerun-plan')).toContainText('Runs as round 2');
  await dialog.getByLabel('Reason, kept in the audit (required)').fill('the feedback partner is back');
  // Someone else moves it back to RECEIVED meanwhile: queued for a worker, so no longer rerun.
  await updateIntentStatus({ id: intent.id, status: 'RECEIVED' }, { name: 'e2e-other-operator' });
  await expect(dialog.getByText('This rerun cannot be planned')).toBeVisible();
  await expect(dialog.getByTestId('rerun-plan')).toHaveCount(0);
  await expect(dialog.getByRole('button', { name: 'Rerun from feedback' })).toBeDisabled();
  await expect(dialog.getByLabel('Reason, kept in the audit (required)')).toHaveValue('the feedback partner is back');
});

test('the Workers page reruns every failed intent matching a filter from a chosen bridge, after a summed plan', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['operator']);
  const marker = uniqueMarker('RERUNMANY');
  const intents = [await failedAtFeedback(marker), await failedAtFeedback(marker)];
  // As a worker leaves an intent that ran out of attempts: its queue row failed with the last error.
  for (const i of intents) await db().$executeRaw`UPDATE intent_work SET state = 'failed', finished_at = now(), last_error = ${`feedback: the partner is down (${marker})`} WHERE intent_id = ${i.id}::uuid`;
  await page.goto('/workers');
  await page.getByPlaceholder('error contains…').fill(marker);
  for (const i of intents) await expect(page.getByRole('link', { name: short(i.id) })).toBeVisible();
  // From the keyboard: Escape closes the dialog and gives the focus back to the button that opened it.
  const rerunAll = page.getByRole('button', { name: 'Rerun all failed matching the filter…' });
  await rerunAll.focus();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Rerun failed intents from a step' });
  await expect(dialog).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(dialog).toHaveCount(0);
  await expect(rerunAll).toBeFocused();
  await rerunAll.click();
  await dialog.getByLabel('Start from bridge').selectOption('normalize');
  await expect(dialog.getByTestId('rerun-many-plan')).toContainText('2 of 2 intents will be rerun from normalize');
  await expect(dialog.getByRole('row').filter({ hasText: 'input' })).toContainText('2');
  await dialog.getByLabel(/^Reason/).fill('partner fixed, rerun from normalize');
  await screenshot(page, 'rerun-many-plan');
  await dialog.getByRole('button', { name: 'Rerun 2 from normalize' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Reran 2 intents: 2 completed.' })).toBeVisible();
});

test('a worker’s run not recorded yet shows as running from its claim; rescued, it shows as abandoned with no step', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['operator']);
  const intent = await seedIntent('RECEIVED', { order: uniqueMarker('UNRECORDED') });
  // The state a one-bridge worker's claim leaves while its bridge runs (claimDueIntents): the claim names the run,
  // nothing is recorded yet. Set on this intent's row alone: a claim statement would take whatever is due first.
  const [claim] = await db().$queryRaw<{ runId: string }[]>`
    UPDATE intent_work SET state = 'running', attempt = attempt + 1, claim_token = nextval('intent_work_claim_token_seq'), claimed_by = 'e2e-worker',
                           claimed_at = now(), heartbeat_at = now(), lease_until = now() + interval '1 hour', run_id = gen_random_uuid()
    WHERE intent_id = ${intent.id}::uuid RETURNING run_id::text AS "runId"`;
  await page.goto(`/intents/${intent.id}`);
  const panel = page.getByRole('region', { name: 'Pipeline runs' });
  const run = panel.getByTestId('pipeline-run');
  await expect(run).toHaveCount(1);
  await expect(run).toContainText('running');
  await expect(run).toContainText('Attempt 1 of round 1, FAILFAST, worker by worker:e2e-worker');
  await expect(run.getByText('Its first bridge is running; its steps show here once they are recorded.')).toBeVisible();

  // Its worker stops heartbeating: the rescuer records the run it named as abandoned.
  await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE intent_id = ${intent.id}::uuid`;
  const rescued = await rescueStaleClaims(db(), { rescuer: 'e2e', limit: 100 });
  expect(rescued.map((r) => r.intentId)).toContain(intent.id);
  await page.reload();
  await expect(run).toContainText('abandoned');
  await expect(run.getByText('No step was recorded.')).toBeVisible();
  await expect(run).toContainText('its worker stopped heartbeating before anything of the run was recorded');
  const [recorded] = await db().$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM pipeline_runs WHERE intent_id = ${intent.id}::uuid`;
  expect(recorded.id).toBe(claim.runId);
});
