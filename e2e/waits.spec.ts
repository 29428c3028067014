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
  await panel.getByLabel('Note (optional)').fill('checked by hand');
  await panel.getByRole('button', { name: 'Approve' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Answer recorded: a worker resumes the run.' })).toBeVisible();
  await expect(page.getByRole('region', { name: 'Waiting for an answer' })).toHaveCount(0);

  const [decided] = await db().$queryRaw<{ state: string; answer: unknown; answeredBy: string; work: string }[]>`
    SELECT w.state, w.answer, w.answered_by AS "answeredBy", q.state AS work
    FROM pipeline_waits w JOIN intent_work q ON q.intent_id = w.intent_id WHERE w.intent_id = ${intent.id}::uuid`;
  expect(decided).toEqual({ state: 'answered', answer: { approved: true, note: 'checked by hand' }, answeredBy: operator.username, work: 'available' });

  // What a worker would do next: the run resumes at the approval, which now has its answer.
  const resumed = await runPipeline({ id: intent.id }, { name: 'e2e-seed' }, { door: 'console', bridges: SET });
  expect(resumed.intent.status).toBe('COMPLETED');
  await page.reload();
  await expect(page.getByRole('region', { name: 'Pipeline runs' }).getByTestId('step-result').filter({ hasText: '"approved":true' })).toBeVisible();
});
