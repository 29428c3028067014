import { expect, test } from './support/test';
import { useSessionOf } from './auth';
import { screenshot, seedIntent, short, uniqueMarker } from './intents-fixtures';
import { db } from '../lib/db/client';
import { runPipeline } from '../lib/pipeline/run';

/**
 * A wait for a person's decision, in the browser (no worker runs in the browser tests: the test resumes the run
 * itself). The pipeline, with the `approval` bridge, stops at the approval; the intent page shows what it waits for
 * and until when, the Workers page lists it, and an operator approves it from the intent page: the answer is
 * recorded and the next run goes on from the approval to COMPLETED.
 */
const SET = ['input', 'normalize', 'approval', 'feedback', 'output'];

test('an operator sees what the pipeline waits for and answers it from the intent page', async ({ page, context, baseURL }) => {
  const operator = await useSessionOf(context, baseURL!, ['operator']);
  const intent = await seedIntent('RECEIVED', { order: uniqueMarker('WAIT'), approval: { timeoutSeconds: 7200 } });
  const { run, wait } = await runPipeline({ id: intent.id }, { name: 'e2e-seed' }, { door: 'console', bridges: SET });
  expect(run.status).toBe('waiting');

  await page.goto(`/intents/${intent.id}`);
  const panel = page.getByRole('region', { name: 'Waiting for an answer' });
  await expect(panel).toContainText('Bridge approval waits for “approval”');
  await expect(panel).toContainText('then the intent fails');
  await expect(panel.locator('time')).toHaveAttribute('dateTime', wait!.deadline);
  // The answer's shape the bridge declared, folded until asked for.
  await panel.getByText('What an answer must look like').click();
  await expect(panel.locator('pre')).toContainText('"approved": {');
  await expect(panel.locator('pre')).toContainText('"additionalProperties": false');
  await screenshot(page, 'intent-wait');

  await page.goto('/workers');
  const waits = page.getByRole('region', { name: 'Waiting for an answer' });
  const row = waits.getByRole('row').filter({ hasText: short(intent.id) });
  await expect(row).toContainText('approval');
  await expect(row).toContainText('fail the intent');

  await page.goto(`/intents/${intent.id}`);
  await panel.getByLabel('Note (optional to approve').fill('checked by hand');
  await panel.getByRole('button', { name: 'Approve' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Answer recorded: a worker resumes the run.' })).toBeVisible();
  // The form answered is gone with its wait: the focus is on what the answer did, not back at the top of the page.
  await expect
    .poll(() => page.evaluate(() => document.activeElement?.textContent?.includes('Answer recorded') ?? false))
    .toBe(true);
  await expect(page.getByRole('region', { name: 'Waiting for an answer' })).toHaveCount(0);

  const [decided] = await db().$queryRaw<{ state: string; answer: unknown; answeredBy: string; work: string }[]>`
    SELECT w.state, w.answer, w.answered_by AS "answeredBy", q.state AS work
    FROM pipeline_waits w JOIN intent_work q ON q.intent_id = w.intent_id WHERE w.intent_id = ${intent.id}::uuid`;
  expect(decided).toEqual({ state: 'answered', answer: { approved: true, note: 'checked by hand' }, answeredBy: operator.username, work: 'available' });
  // The run that stopped at the wait no longer reads as waiting: it says who answered what, and that a worker resumes it.
  const outcome = page.getByTestId('run-wait-outcome');
  await expect(outcome).toContainText(`“approval” answered by ${operator.username} at `);
  await expect(outcome).toContainText('"approved":true');
  await expect(outcome).toContainText('"note":"checked by hand"');
  await expect(outcome).toContainText('A worker resumes the run.');
  await expect(page.getByTestId('pipeline-run').first()).toContainText('waited');

  // What a worker would do next: the run resumes at the approval, which now has its answer.
  const resumed = await runPipeline({ id: intent.id }, { name: 'e2e-seed' }, { door: 'console', bridges: SET });
  expect(resumed.intent.status).toBe('COMPLETED');
  await page.reload();
  await expect(page.getByRole('region', { name: 'Pipeline runs' }).getByTestId('step-result').filter({ hasText: '"approved":true' })).toBeVisible();
  await expect(outcome).toContainText('Resumed at ');
  await expect(outcome).toContainText('(the run above)');
  await screenshot(page, 'intent-waited');
});

test('a rejection asks first and wants a note, which becomes the failed intent’s reason', async ({ page, context, baseURL }) => {
  const operator = await useSessionOf(context, baseURL!, ['operator']);
  const intent = await seedIntent('RECEIVED', { order: uniqueMarker('REJECT') });
  await runPipeline({ id: intent.id }, { name: 'e2e-seed' }, { door: 'console', bridges: SET });
  // A second run while the wait is open asks again: it resumes nothing, and does not say so.
  expect((await runPipeline({ id: intent.id }, { name: 'e2e-seed' }, { door: 'console', bridges: SET })).run.status).toBe('waiting');

  await page.goto(`/intents/${intent.id}`);
  await expect(page.getByTestId('pipeline-run')).toHaveCount(2);
  await expect(page.getByTestId('pipeline-run').first()).not.toContainText('resumed after the wait');
  const panel = page.getByRole('region', { name: 'Waiting for an answer' });
  await panel.getByRole('button', { name: 'Reject…' }).click();
  const dialog = page.getByRole('dialog', { name: `Reject intent ${short(intent.id)}?` });
  await expect(dialog).toContainText('the intent becomes FAILED, with your note as the reason');
  const confirm = dialog.getByRole('button', { name: 'Reject and fail the intent' });
  await expect(confirm).toBeDisabled();
  // Cancel changes nothing: the wait is still open.
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(panel).toBeVisible();

  await panel.getByRole('button', { name: 'Reject…' }).click();
  await dialog.getByLabel('Why (required)').fill('amount does not match the signed order');
  await screenshot(page, 'intent-wait-reject');
  await confirm.click();
  await expect(page.getByRole('status').filter({ hasText: 'Answer recorded: a worker resumes the run.' })).toBeVisible();

  // The resumed run fails the intent with the note as its reason.
  const resumed = await runPipeline({ id: intent.id }, { name: 'e2e-seed' }, { door: 'console', bridges: SET });
  expect(resumed.intent.status).toBe('FAILED');
  expect(resumed.run.error).toContain(`Rejected by ${operator.username}: amount does not match the signed order`);
  // The run after the decision is the one that resumed.
  await page.reload();
  await expect(page.getByTestId('pipeline-run')).toHaveCount(3);
  await expect(page.getByTestId('pipeline-run').first()).toContainText('(resumed after the wait)');
});
