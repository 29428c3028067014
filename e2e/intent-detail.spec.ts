import { expect, test, type Page } from './support/test';
import pg from 'pg';
import { useSessionOf } from './auth';
import { expectLive, screenshot, seedIntent, uniqueMarker } from './intents-fixtures';

/**
 * Reviewers correcting intents: the diff editor validates as you type, a double click applies once, the history
 * shows who, when, why and the diff; and when someone else got in first, the three-way view lets the reviewer see
 * the change and re-apply on top of it.
 */
const form = (page: Page) => page.getByRole('form', { name: 'Correction' });
const history = (page: Page) => page.getByRole('list', { name: 'Corrections, newest first' });
const applied = (page: Page) => form(page).getByRole('status').filter({ hasText: 'Correction applied' });

/** These tests type the diff as JSON; the field editor, the form's default, has its own (correction-fields.spec.ts). */
async function asJson(page: Page) {
  const json = form(page).getByRole('group', { name: 'Edit the correction as' }).getByRole('button', { name: 'JSON' });
  // A click that lands before the page is hydrated does nothing: click until the switch says JSON.
  await expect(async () => {
    if ((await json.getAttribute('aria-pressed')) !== 'true') await json.click();
    await expect(json).toHaveAttribute('aria-pressed', 'true', { timeout: 1_000 });
  }).toPass();
}

async function fillCorrection(page: Page, diff: string, reason: string) {
  const f = form(page);
  await asJson(page);
  await f.getByLabel(/^Diff \(JSON\)/).fill(diff);
  await f.getByLabel('Reason').fill(reason);
}

test('a reviewer applies a correction (a double click applies it once) and sees it in the history', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('e2e-review');
  const intent = await seedIntent('PROCESSED', { marker, amount: 10, currency: 'EUR', customer: { city: 'Leeds' } });
  const reviewer = await useSessionOf(context, baseURL!, ['reviewer']);
  await page.goto(`/intents/${intent.id}`);
  await expect(page.getByTestId('intent-version')).toHaveText('2');
  // A reviewer is not an operator: no status buttons.
  await expect(page.getByRole('group', { name: 'Status actions' })).toHaveCount(0);

  // Validated as you type.
  await asJson(page);
  const editor = form(page).getByLabel(/^Diff \(JSON\)/);
  await editor.fill('{ "amount": 12.5, }');
  await expect(form(page)).toContainText('Not valid JSON');
  await expect(editor).toHaveAttribute('aria-invalid', 'true');
  await editor.fill('[1, 2]');
  await expect(form(page)).toContainText('The diff must be a JSON object');
  await fillCorrection(page, '{ "amount": 12.5, "customer": { "city": "York" } }', 'Partner sent the wrong amount (ticket OPS-1)');
  await expect(editor).toHaveAttribute('aria-invalid', 'false');
  await expect(form(page)).toContainText('Valid: changes 2 fields of version 2');
  await expect(form(page).getByRole('group', { name: 'Preview of your change' })).toContainText('amount: 10');
  await screenshot(page, 'intent-correction-form');

  await form(page).getByRole('button', { name: 'Apply correction' }).dblclick();
  await expect(applied(page)).toContainText('Correction applied: now version 3, CORRECTED');
  await expect(page.getByTestId('intent-status')).toHaveText('CORRECTED');
  await expect(page.getByTestId('intent-version')).toHaveText('3');

  const entries = history(page).getByTestId('correction');
  await expect(entries).toHaveCount(1);
  await expect(entries.first()).toContainText(reviewer.username);
  await expect(entries.first()).toContainText('Partner sent the wrong amount (ticket OPS-1)');
  await expect(entries.first()).toContainText('v2 → v3');
  // A two-sided diff: the console records the values the correction replaced.
  await expect(entries.first().getByTestId('diff')).toContainText('−amount: 10');
  await expect(entries.first().getByTestId('diff')).toContainText('+amount: 12.5');
  await expect(entries.first().getByTestId('diff')).toContainText('−customer.city: "Leeds"');
  await expect(entries.first().getByTestId('diff')).toContainText('+customer.city: "York"');
  // Exactly one correction on the timeline too: the double click did not apply it twice.
  await expect(page.locator('[data-testid="timeline-entry"][data-kind="correction"]')).toHaveCount(1);
  await expect(page.getByRole('region', { name: 'Payload' })).toContainText('"York"');
  // The form now edits the new version.
  await expect(page.getByTestId('form-version')).toHaveText('3');
  await screenshot(page, 'intent-detail');
});

test('two reviewers edit the same intent: the second sees the conflict, what changed and who changed it, and re-applies', async ({ browser, baseURL }) => {
  // Two people's pages, each live, through forty steps that each wait for what they assert: more than the default
  // minute when the suites run side by side on two cores.
  test.slow();
  const marker = uniqueMarker('e2e-conflict');
  const intent = await seedIntent('PROCESSED', { marker, amount: 10, currency: 'EUR' });

  const first = await browser.newContext();
  const second = await browser.newContext();
  const alice = await useSessionOf(first, baseURL!, ['reviewer']);
  const bob = await useSessionOf(second, baseURL!, ['reviewer']);
  const a = await first.newPage();
  const b = await second.newPage();
  await a.goto(`/intents/${intent.id}`);
  await b.goto(`/intents/${intent.id}`);
  await expectLive(b);

  await fillCorrection(a, '{ "amount": 20 }', 'Alice: amount confirmed by partner');
  await fillCorrection(b, '{ "currency": "USD" }', 'Bob: currency was wrong');
  await form(a).getByRole('button', { name: 'Apply correction' }).click();
  await expect(applied(a)).toContainText('now version 3');

  // Bob's page follows live (the version shown moves on) but his form keeps the version he opened.
  await expect(b.getByTestId('intent-version')).toHaveText('3');
  await expect(b.getByTestId('form-version')).toHaveText('2');
  await expect(form(b)).toContainText('This intent changed since you opened the form (version 2 → 3)');
  await form(b).getByRole('button', { name: 'Apply correction' }).click();

  const conflict = b.getByTestId('conflict');
  await expect(conflict.getByRole('heading', { name: /Someone changed this intent first: you edited version 2, it is now at version 3/ })).toBeVisible();
  await expect(conflict.getByRole('region', { name: 'Your edit' })).toContainText('+currency: "USD"');
  await expect(conflict.getByRole('region', { name: 'The intent now' })).toContainText('"amount": 20');
  const since = conflict.getByTestId('change-since');
  await expect(since).toHaveCount(1);
  await expect(since.first()).toContainText(alice.username);
  await expect(since.first()).toContainText('Alice: amount confirmed by partner');
  await expect(since.first()).toContainText('−amount: 10');
  await expect(since.first()).toContainText('+amount: 20');
  // Alice touched another field: the view says so and offers the merge in one click; it opened at its headline.
  await expect(conflict.getByTestId('conflict-mergeable')).toBeVisible();
  await expect(conflict.getByRole('heading', { name: /Someone changed this intent first/ })).toBeFocused();
  await screenshot(b, 'intent-conflict');

  await conflict.getByRole('button', { name: 'Merge: keep theirs, apply mine on version 3' }).click();
  await expect(applied(b)).toContainText('Correction applied: now version 4');
  const entries = history(b).getByTestId('correction');
  await expect(entries).toHaveCount(2);
  await expect(entries.first()).toContainText(bob.username);
  await expect(entries.nth(1)).toContainText(alice.username);
  await expect(b.getByRole('region', { name: 'Payload' })).toContainText('"USD"');
  await expect(b.getByRole('region', { name: 'Payload' })).toContainText('20');
  // The refused attempt is on record.
  await expect(b.getByTestId('conflict-event')).toHaveCount(1);
  await expect(b.getByTestId('conflict-event')).toContainText(bob.username);
  await expect(b.getByTestId('conflict-event')).toContainText('v2 → v3');

  // Alice's page caught up without a reload.
  await expect(history(a).getByTestId('correction')).toHaveCount(2);
  await first.close();
  await second.close();
});

test('a reviewer discards an edit that conflicts, and starts again from the current version', async ({ browser, baseURL }) => {
  const intent = await seedIntent('NORMALIZED', { marker: uniqueMarker('e2e-discard'), amount: 5 });
  const first = await browser.newContext();
  const second = await browser.newContext();
  await useSessionOf(first, baseURL!, ['reviewer']);
  await useSessionOf(second, baseURL!, ['reviewer']);
  const a = await first.newPage();
  const b = await second.newPage();
  await a.goto(`/intents/${intent.id}`);
  await b.goto(`/intents/${intent.id}`);
  // Both edits are typed before the first lands: an empty form would follow the intent to its new version instead.
  await fillCorrection(a, '{ "amount": 6 }', 'first');
  await fillCorrection(b, '{ "amount": 7 }', 'second');
  await form(a).getByRole('button', { name: 'Apply correction' }).click();
  await expect(applied(a)).toContainText('now version 2');
  await form(b).getByRole('button', { name: 'Apply correction' }).click();
  await expect(b.getByTestId('conflict')).toContainText('Both changes touch: amount');
  await b.getByRole('button', { name: 'Discard my edit' }).click();
  await expect(b.getByTestId('conflict')).toHaveCount(0);
  await expect(b.getByTestId('form-version')).toHaveText('2');
  await expect(form(b).getByLabel('Reason')).toHaveValue('');
  await expect(history(b).getByTestId('correction')).toHaveCount(1);
  await first.close();
  await second.close();
});

test('the conflict and the draft survive a reload; the reviewer reworks the edit before re-applying', async ({ browser, baseURL }) => {
  // Two reviewers' pages, a conflict and a reload on the way: more than the default minute when the suites run
  // side by side on two cores.
  test.slow();
  const intent = await seedIntent('PROCESSED', { marker: uniqueMarker('e2e-rework'), amount: 10, note: 'n' });
  const first = await browser.newContext();
  const second = await browser.newContext();
  await useSessionOf(first, baseURL!, ['reviewer']);
  await useSessionOf(second, baseURL!, ['reviewer']);
  const a = await first.newPage();
  const b = await second.newPage();
  await a.goto(`/intents/${intent.id}`);
  await b.goto(`/intents/${intent.id}`);
  await expectLive(a);
  await expectLive(b);

  // A draft typed but not sent is still there after a reload.
  await fillCorrection(b, '{ "amount": 30, "note": "checked" }', 'Bob: partner file says 30');
  await b.reload();
  await expectLive(b);
  await expect(form(b).getByLabel('Reason')).toHaveValue('Bob: partner file says 30');

  await fillCorrection(a, '{ "amount": 20 }', 'Alice: 20');
  await form(a).getByRole('button', { name: 'Apply correction' }).click();
  await expect(applied(a)).toContainText('now version 3');
  await form(b).getByRole('button', { name: 'Apply correction' }).click();
  const conflict = b.getByTestId('conflict');
  await expect(conflict.getByTestId('conflict-overlap')).toContainText('amount');

  // The conflict is still in front of Bob after a reload, with what changed (before → after).
  await b.reload();
  await expectLive(b);
  await expect(conflict).toBeVisible();
  await expect(conflict.getByTestId('change-since').first()).toContainText('−amount: 10');
  await expect(conflict.getByTestId('change-since').first()).toContainText('+amount: 20');

  // Bob keeps Alice's amount and only adds his note.
  await conflict.getByTestId('conflict-editor').fill('{ "note": "checked" }');
  await expect(conflict.getByTestId('conflict-mergeable')).toBeVisible();
  await conflict.getByRole('button', { name: 'Merge: keep theirs, apply mine on version 3' }).click();
  await expect(applied(b)).toContainText('Correction applied: now version 4');
  await expect(b.getByRole('region', { name: 'Payload' })).toContainText('"checked"');
  await expect(b.getByRole('region', { name: 'Payload' })).toContainText('20');
  // Applied: nothing is restored on the next visit.
  await b.reload();
  await expect(b.getByTestId('conflict')).toHaveCount(0);
  await expect(form(b).getByLabel('Reason')).toHaveValue('');
  await first.close();
  await second.close();
});

test('a status change queued behind another transaction\'s row lock says it is waiting, then goes through when the lock is freed', async ({ page, context, baseURL }) => {
  const intent = await seedIntent('RECEIVED', { marker: uniqueMarker('e2e-lockwait') });
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents/${intent.id}`);
  await expectLive(page);
  const holder = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'e2e lock holder' });
  holder.on('error', () => undefined);
  await holder.connect();
  const waitingNotice = page.getByTestId('lock-wait').filter({ hasText: 'Waiting for the row lock' });
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    await page.getByRole('group', { name: 'Status actions' }).getByRole('button', { name: 'Move to NORMALIZED' }).click();
    // Well before the server's 5 s lock timeout runs out, the page says what it is waiting for, politely.
    await expect(waitingNotice).toHaveText('Waiting for the row lock… (another transaction holds this intent; gives up after 5 s)', { timeout: 3_000 });
    await expect(waitingNotice).toHaveAttribute('aria-live', 'polite');
    await expect(page.getByTestId('intent-status')).toHaveText('RECEIVED');
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
  }
  await expect(page.getByTestId('intent-status')).toHaveText('NORMALIZED');
  await expect(waitingNotice).toHaveCount(0);
});

test('a slow answer is not called a lock wait, and a refresh that fails keeps the page, says so, and recovers', async ({ page, context, baseURL }) => {
  const intent = await seedIntent('RECEIVED', { marker: uniqueMarker('e2e-slow') });
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents/${intent.id}`);
  await expectLive(page);
  // The server action's request is held back (a slow network): no row is locked, so nothing says it is.
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  await page.route(`**/intents/${intent.id}`, async (route) => {
    if (route.request().method() === 'POST') await released;
    await route.continue();
  });
  await page.getByRole('group', { name: 'Status actions' }).getByRole('button', { name: 'Move to NORMALIZED' }).click();
  await expect(page.getByTestId('lock-wait')).toHaveText('Waiting for the server’s answer…');
  release();
  await expect(page.getByTestId('intent-status')).toHaveText('NORMALIZED');
  // The button pressed is gone with the old status: the focus goes to what the change answered, not to the page.
  await expect
    .poll(() => page.evaluate(() => document.activeElement?.contains(document.querySelector('[data-testid="status-notice"]')) ?? false))
    .toBe(true);
  await page.unroute(`**/intents/${intent.id}`);

  // The intent's own read fails from now on: a change made elsewhere cannot be shown, but the page stays.
  await page.route(`**/api/intents/${intent.id}`, (route) => route.abort());
  await page.getByRole('group', { name: 'Status actions' }).getByRole('button', { name: 'Move to PROCESSED' }).click();
  await expect(page.getByTestId('detail-stale')).toContainText('This intent could not be refreshed');
  await expect(page.getByRole('group', { name: 'Status actions' })).toBeVisible();
  await page.unroute(`**/api/intents/${intent.id}`);
  await page.getByTestId('detail-stale').getByRole('button', { name: 'Try again' }).click();
  await expect(page.getByTestId('detail-stale')).toHaveCount(0);
  await expect(page.getByTestId('intent-status')).toHaveText('PROCESSED');
});

test('an empty correction form follows the intent: the operator\u2019s own status change is no conflict', async ({ page, context, baseURL }) => {
  const intent = await seedIntent('NORMALIZED', { marker: uniqueMarker('e2e-follow'), amount: 5 });
  await useSessionOf(context, baseURL!, ['operator', 'reviewer']);
  await page.goto(`/intents/${intent.id}`);
  await expect(page.getByTestId('form-version')).toHaveText('1');
  await page.getByRole('group', { name: 'Status actions' }).getByRole('button', { name: 'Move to PROCESSED' }).click();
  await expect(page.getByTestId('intent-version')).toHaveText('2');
  // Nothing was typed yet: the form moved on with the intent, and the correction applies without a conflict.
  await expect(page.getByTestId('form-version')).toHaveText('2');
  await expect(form(page)).not.toContainText('This intent changed since you opened the form');
  await fillCorrection(page, '{ "amount": 6 }', 'partner confirmed');
  await form(page).getByRole('button', { name: 'Apply correction' }).click();
  await expect(applied(page)).toContainText('now version 3');
  await expect(page.getByTestId('conflict')).toHaveCount(0);
});
