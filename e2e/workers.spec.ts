import { expect, test } from '@playwright/test';
import { useSessionOf } from './auth';
import { screenshot, seedIntent, short, uniqueMarker } from './intents-fixtures';

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
