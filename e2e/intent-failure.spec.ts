import { expect, test, type Locator, type Page } from './support/test';
import { updateIntentStatus } from '../lib/intents/commands';
import { runPipeline } from '../lib/pipeline/run';
import { failThroughPipeline } from '../lib/seed/demo-failures';
import { useSessionOf } from './auth';
import { expectLive, screenshot, seedIntent, uniqueMarker } from './intents-fixtures';

/**
 * The intent page for an operator deciding what to do with an intent: a FAILED one says why (each attempt's error
 * and the reason on its FAILED mark); the two ways back from FAILED are named for what they do; a banner about an
 * action goes once the intent has moved past it; a step's long result stays inside its card on a phone and a laptop.
 */
const someone = { name: 'e2e-someone-else' };
const statusCard = (page: Page) => page.getByRole('region', { name: 'Status' });
const pipelineCard = (page: Page) => page.getByRole('region', { name: 'Pipeline runs' });

/** A FAILED intent as the demo data has them: three pipeline attempts, each refused by the partner ledger. */
async function failedIntent() {
  const payload = { reference: uniqueMarker('PAY'), customer: { id: 'C4821', city: 'Leeds' }, amount: 120.5, currency: 'EUR' };
  const intent = await seedIntent('RECEIVED', payload);
  await failThroughPipeline(intent.id, payload);
  return { ...intent, payload };
}

/** Nothing inside `region` is wider than the region itself (a table or a result pushed out of its card). */
async function expectContained(region: Locator) {
  const overflow = await region.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const wider = [...el.querySelectorAll('*')].filter((child) => child.getBoundingClientRect().right > box.right + 1);
    return { scroll: el.scrollWidth - el.clientWidth, wider: wider.map((w) => w.tagName).slice(0, 5) };
  });
  expect(overflow).toEqual({ scroll: 0, wider: [] });
}

test('a FAILED intent shows why it failed: the FAILED mark and every attempt with its time, bridge and error', async ({ page, context, baseURL }) => {
  const intent = await failedIntent();
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents/${intent.id}`);
  await expect(page.getByTestId('intent-status')).toHaveText('FAILED');
  const why = page.getByRole('region', { name: 'Why it failed' });
  await expect(why.getByTestId('failure-mark')).toContainText('Marked FAILED by seed:worker-1');
  await expect(why.getByTestId('failure-mark')).toContainText('from PROCESSED, version 3');
  await expect(why.getByTestId('failure-mark')).toContainText(`pipeline: partner-ledger failed: bridge_failed: The partner ledger refused ${intent.payload.reference}: account C4821 is closed`);
  const attempts = why.getByRole('list', { name: 'Failed attempts, newest first' }).getByTestId('failed-attempt');
  await expect(attempts).toHaveCount(3);
  await expect(attempts.nth(0)).toContainText('Attempt 3');
  await expect(attempts.nth(0)).toContainText('partner-ledger');
  await expect(attempts.nth(0)).toContainText('account C4821 is closed (409 account_closed)');
  await expect(attempts.nth(1)).toContainText('Attempt 2');
  await expect(attempts.nth(1)).toContainText('503 Service Unavailable');
  await expect(attempts.nth(2)).toContainText('Attempt 1');
  await expect(attempts.nth(2)).toContainText('did not answer within 5000 ms');
  await expect(attempts.nth(2)).toContainText(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
  await expect(attempts.nth(2)).toContainText('worker · seed:worker-1');
  // The pipeline card numbers the same runs as attempts.
  await expect(pipelineCard(page).getByTestId('pipeline-run').first()).toContainText('Attempt 3 of round 1');
  await screenshot(page, 'intent-failed-reason');

  // On a phone the reasons and the runs stay inside their cards.
  await page.setViewportSize({ width: 390, height: 844 });
  await expect(why).toBeVisible();
  await expectContained(why);
  await expectContained(pipelineCard(page));
  await why.screenshot({ path: 'test-results/screenshots/intent-failed-reason-phone.png' });
});

test('one label, one meaning: "Move back to RECEIVED" only moves it; "Run pipeline again" also runs the pipeline', async ({ page, context, baseURL }) => {
  const intent = await failedIntent();
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents/${intent.id}`);
  await expect(page.getByRole('button', { name: /retry/i })).toHaveCount(0);
  await expect(statusCard(page).getByRole('button', { name: 'Move back to RECEIVED' })).toBeVisible();
  await pipelineCard(page).getByRole('button', { name: 'Run pipeline again' }).click();
  // The console's BridgeSet has no failing ledger: this time the run goes through.
  await expect(pipelineCard(page).getByRole('status')).toHaveText('Run succeeded: the intent is COMPLETED.');
  await expect(page.getByTestId('intent-status')).toHaveText('COMPLETED');
  await expect(pipelineCard(page).getByTestId('pipeline-run').first()).toContainText('Attempt 1 of round 2');
  await expect(page.getByRole('region', { name: 'Why it failed' })).toHaveCount(0);
});

test('a banner about an action goes once the intent moves past the version the action left', async ({ page, context, baseURL }) => {
  const intent = await failedIntent();
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents/${intent.id}`);
  await expectLive(page);
  await statusCard(page).getByRole('button', { name: 'Move back to RECEIVED' }).click();
  const moved = page.getByTestId('status-notice');
  await expect(moved).toHaveText('Moved to RECEIVED (version 4).');

  // Someone else's run (a worker's, in production) takes it on to COMPLETED: the page follows live, and the banner
  // about version 4 no longer speaks of this intent.
  await runPipeline({ id: intent.id }, someone);
  await expect(page.getByTestId('intent-version')).toHaveText('7');
  await expect(page.getByTestId('intent-status')).toHaveText('COMPLETED');
  await expect(moved).toHaveCount(0);

  // The pipeline card's banner too: an empty payload fails the run (FAILFAST fails the intent) …
  const empty = await seedIntent('RECEIVED', {});
  await page.goto(`/intents/${empty.id}`);
  await expectLive(page);
  await pipelineCard(page).getByRole('button', { name: 'Run pipeline' }).click();
  const ran = pipelineCard(page).getByRole('status');
  await expect(ran).toHaveText('Run failed: the intent is FAILED.');
  // … and once someone moves it back, that banner is gone.
  await updateIntentStatus({ id: empty.id, status: 'RECEIVED' }, someone);
  await expect(page.getByTestId('intent-status')).toHaveText('RECEIVED');
  await expect(ran).toHaveCount(0);
});

test('a step’s long result stays inside the pipeline card, on a laptop and on a phone', async ({ page, context, baseURL }) => {
  const longKey = `partner_reference_${'x'.repeat(260)}`;
  const intent = await seedIntent('RECEIVED', { [longKey]: '  padded  ', note: ` ${uniqueMarker('wide')} ` });
  await runPipeline({ id: intent.id }, someone);
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents/${intent.id}`);
  const result = pipelineCard(page).getByTestId('step-result').filter({ hasText: longKey });
  await expect(result).toBeVisible();
  await expectContained(pipelineCard(page));
  await page.setViewportSize({ width: 390, height: 844 });
  await expect(result).toBeVisible();
  await expectContained(pipelineCard(page));
  await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await pipelineCard(page).screenshot({ path: 'test-results/screenshots/intent-pipeline-long-result-phone.png' });
});
