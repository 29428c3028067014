import AxeBuilder from '@axe-core/playwright';
import { expect, test, type Page } from './support/test';
import { reevaluateIntent } from '../lib/intents/commands';
import { getIntent } from '../lib/intents/queries';
import { THEME_COOKIE } from '../lib/console/theme';
import { useSessionOf } from './auth';
import { expectLive, seedIntent, uniqueMarker } from './intents-fixtures';

/**
 * Reviewers correcting an intent field by field: pick a field, see its value, type the new one in an input of its
 * type; the diff is built from the fields, the JSON editor edits the same draft, and a draft made this way meets a
 * conflict like any other.
 */
const form = (page: Page) => page.getByRole('form', { name: 'Correction' });
const row = (page: Page, path: string) => form(page).locator(`[data-testid="field-edit"][data-path="${path}"]`);
const modeButton = (page: Page, name: 'Fields' | 'JSON') => form(page).getByRole('group', { name: 'Edit the correction as' }).getByRole('button', { name });
const applied = (page: Page) => form(page).getByRole('status').filter({ hasText: 'Correction applied' });

/** Adds a field through the picker, by the button or, from the keyboard, by Enter on the list. */
async function addField(page: Page, path: string, by: 'button' | 'enter' = 'button') {
  const picker = form(page).getByLabel('Field to change');
  await picker.selectOption(path);
  if (by === 'enter') await picker.press('Enter');
  else await form(page).getByRole('button', { name: 'Add field' }).click();
  await expect(row(page, path)).toBeVisible();
}

const payloadOf = async (id: string) => (await getIntent(id)).payload as Record<string, unknown>;

test('a reviewer corrects field by field: sees each value, types typed values, applies; the history shows the diff', async ({ page, context, baseURL }) => {
  const intent = await seedIntent('PROCESSED', { marker: uniqueMarker('e2e-fields'), amount: 10, paid: false, customer: { name: 'Ada', city: 'Leeds' }, items: [{ sku: 'A-1', qty: 2 }, { sku: 'B-2', qty: 1 }] });
  const reviewer = await useSessionOf(context, baseURL!, ['reviewer']);
  await page.goto(`/intents/${intent.id}`);
  await expectLive(page);
  await expect(modeButton(page, 'Fields')).toHaveAttribute('aria-pressed', 'true');

  await addField(page, 'amount');
  await expect(row(page, 'amount').getByTestId('field-now')).toHaveText('now: 10');
  const amount = form(page).getByLabel('New value of amount');
  // The new row takes the focus, starting at the current value.
  await expect(amount).toBeFocused();
  await expect(amount).toHaveValue('10');
  await amount.fill('12,5');
  await expect(row(page, 'amount').getByTestId('field-error')).toHaveText('amount: "12,5" is not a number (digits, a dot for decimals: 12.5).');
  await expect(amount).toHaveAttribute('aria-invalid', 'true');
  await amount.fill('12.5');
  await expect(amount).toHaveAttribute('aria-invalid', 'false');

  await addField(page, 'customer.name', 'enter');
  await expect(row(page, 'customer.name').getByTestId('field-now')).toHaveText('now: "Ada"');
  await expect(form(page).getByLabel('New value of customer.name')).toBeFocused();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.type('Ada Lovelace');
  await addField(page, 'paid');
  await form(page).getByLabel('New value of paid').selectOption('true');
  await addField(page, 'items[1].qty');
  await form(page).getByLabel('New value of items[1].qty').fill('3');

  // The diff as it will be sent: typed values, the list whole with its one item changed.
  await form(page).getByText('The diff this correction sends (JSON)').click();
  const sent = JSON.parse((await form(page).getByTestId('field-patch').textContent())!);
  expect(sent).toEqual({ amount: 12.5, customer: { name: 'Ada Lovelace' }, paid: true, items: [{ sku: 'A-1', qty: 2 }, { sku: 'B-2', qty: 3 }] });
  await expect(form(page).getByRole('group', { name: 'Preview of your change' })).toContainText('customer.name: "Ada Lovelace"');

  await form(page).getByLabel('Reason').fill('Partner file: amount and name (ticket OPS-7)');
  await form(page).getByRole('button', { name: 'Apply correction' }).click();
  await expect(applied(page)).toContainText('Correction applied: now version 3, CORRECTED');
  await expect(page.getByRole('region', { name: 'Payload' })).toContainText('"Ada Lovelace"');
  const stored = await payloadOf(intent.id);
  expect(stored).toMatchObject({ amount: 12.5, paid: true, customer: { name: 'Ada Lovelace', city: 'Leeds' }, items: [{ sku: 'A-1', qty: 2 }, { sku: 'B-2', qty: 3 }] });

  const entry = page.getByRole('list', { name: 'Corrections, newest first' }).getByTestId('correction').first();
  await expect(entry).toContainText(reviewer.username);
  await expect(entry.getByTestId('diff')).toContainText('−amount: 10');
  await expect(entry.getByTestId('diff')).toContainText('+amount: 12.5');
  await expect(entry.getByTestId('diff')).toContainText('−customer.name: "Ada"');
  await expect(entry.getByTestId('diff')).toContainText('+paid: true');
  // The form starts again, empty, on the new version.
  await expect(page.getByTestId('form-version')).toHaveText('3');
  await expect(form(page).getByTestId('field-edit')).toHaveCount(0);
});

test('Fields | JSON edit one draft: switching carries it over both ways, and is refused while it does not read', async ({ page, context, baseURL }) => {
  const intent = await seedIntent('PROCESSED', { marker: uniqueMarker('e2e-fields-json'), amount: 10, currency: 'EUR', paid: false });
  await useSessionOf(context, baseURL!, ['reviewer']);
  await page.goto(`/intents/${intent.id}`);
  await expectLive(page);

  await addField(page, 'amount');
  await form(page).getByLabel('New value of amount').fill('20');
  await addField(page, 'currency');
  await form(page).getByLabel('New value of currency').fill('USD');
  await modeButton(page, 'JSON').click();
  const editor = form(page).getByLabel(/^Diff \(JSON\)/);
  await expect(modeButton(page, 'JSON')).toHaveAttribute('aria-pressed', 'true');
  expect(JSON.parse(await editor.inputValue())).toEqual({ amount: 20, currency: 'USD' });

  await editor.fill('{ "amount": 21, "currency": "USD", "paid": true }');
  await modeButton(page, 'Fields').click();
  await expect(form(page).getByTestId('field-edit')).toHaveCount(3);
  await expect(form(page).getByLabel('New value of amount')).toHaveValue('21');
  await expect(form(page).getByLabel('Type of amount')).toHaveValue('number');
  await expect(form(page).getByLabel('New value of paid')).toHaveValue('true');

  // A field that does not read keeps the reviewer in the field editor, told which one.
  await form(page).getByLabel('New value of amount').fill('2x');
  await modeButton(page, 'JSON').click();
  await expect(form(page).getByTestId('mode-note')).toHaveText(/^Fix the fields first: amount: "2x" is not a number/);
  await expect(modeButton(page, 'Fields')).toHaveAttribute('aria-pressed', 'true');
  // Nor is it applied, and the form says which field stops it.
  await form(page).getByRole('button', { name: 'Apply correction' }).click();
  await expect(form(page).getByTestId('field-editor')).toContainText('Not applied: amount: "2x" is not a number');
  await form(page).getByLabel('New value of amount').fill('22');
  // Removing a field from the correction gives the focus back to the picker.
  await form(page).getByRole('button', { name: 'Remove currency from this correction' }).click();
  await expect(form(page).getByLabel('Field to change')).toBeFocused();

  await modeButton(page, 'JSON').click();
  expect(JSON.parse(await editor.inputValue())).toEqual({ amount: 22, paid: true });
  await editor.fill('{ "amount": 22, ');
  await modeButton(page, 'Fields').click();
  await expect(form(page).getByTestId('mode-note')).toContainText('Fix the JSON first: Not valid JSON');
  await expect(modeButton(page, 'JSON')).toHaveAttribute('aria-pressed', 'true');

  // The draft, in the editor it was left in, survives a reload.
  await editor.fill('{ "amount": 23 }');
  await modeButton(page, 'Fields').click();
  await page.reload();
  await expectLive(page);
  await expect(form(page).getByLabel('New value of amount')).toHaveValue('23');
});

test('a field-editor draft that meets a conflict: the three-way view shows it, and the merge keeps the typed values', async ({ page, context, baseURL }) => {
  const intent = await seedIntent('PROCESSED', { marker: uniqueMarker('e2e-fields-conflict'), amount: 10, currency: 'EUR', fee: 1 });
  await useSessionOf(context, baseURL!, ['reviewer']);
  await page.goto(`/intents/${intent.id}`);
  await expectLive(page);
  await addField(page, 'fee');
  await form(page).getByLabel('New value of fee').fill('1.5');
  await addField(page, 'currency');
  await form(page).getByLabel('New value of currency').fill('USD');
  await form(page).getByLabel('Reason').fill('Bob: fee and currency from the partner file');

  // Someone else corrects the amount first.
  await reevaluateIntent({ id: intent.id, diff: { amount: 20 }, source: 'e2e', reason: 'Alice: amount', expectedVersion: intent.version }, { name: 'e2e-alice' });
  await expect(page.getByTestId('intent-version')).toHaveText(String(intent.version + 1));
  await form(page).getByRole('button', { name: 'Apply correction' }).click();

  const conflict = page.getByTestId('conflict');
  await expect(conflict.getByRole('region', { name: 'Your edit' })).toContainText('+fee: 1.5');
  await expect(conflict.getByRole('region', { name: 'Your edit' })).toContainText('+currency: "USD"');
  await expect(conflict.getByTestId('change-since').first()).toContainText('+amount: 20');
  await expect(conflict.getByTestId('conflict-mergeable')).toBeVisible();
  expect(JSON.parse(await conflict.getByTestId('conflict-editor').inputValue())).toEqual({ fee: 1.5, currency: 'USD' });
  await conflict.getByRole('button', { name: `Merge: keep theirs, apply mine on version ${intent.version + 1}` }).click();

  await expect(applied(page)).toContainText(`Correction applied: now version ${intent.version + 2}`);
  expect(await payloadOf(intent.id)).toMatchObject({ amount: 20, fee: 1.5, currency: 'USD' });
  // Nothing of the draft is left in the field editor.
  await expect(form(page).getByTestId('field-edit')).toHaveCount(0);
});

for (const theme of ['light', 'dark'] as const) {
  test(`the field editor with its fields has no serious accessibility violation (${theme})`, async ({ browser, baseURL }) => {
    const intent = await seedIntent('PROCESSED', { marker: uniqueMarker('e2e-fields-a11y'), amount: 10, currency: 'EUR', paid: false, note: 'call back', customer: { name: 'Ada', city: 'Leeds' }, tags: ['vip'] });
    const context = await browser.newContext({ baseURL, viewport: { width: 1440, height: 900 }, colorScheme: theme, reducedMotion: 'reduce' });
    try {
      await context.addCookies([{ name: THEME_COOKIE, value: theme, url: baseURL! }]);
      await useSessionOf(context, baseURL!, ['reviewer']);
      const page = await context.newPage();
      await page.goto(`/intents/${intent.id}`);
      await expectLive(page);
      await addField(page, 'amount');
      await form(page).getByLabel('New value of amount').fill('12.5');
      await addField(page, 'customer.city');
      await form(page).getByLabel('New value of customer.city').fill('York');
      await addField(page, 'paid');
      await form(page).getByLabel('New value of paid').selectOption('true');
      await addField(page, 'note');
      await form(page).getByLabel('Type of note').selectOption('null');
      await addField(page, 'tags');
      await form(page).getByLabel('New value of tags').fill('["vip", "late"]');
      await form(page).getByLabel('Reason').fill('Partner file, ticket OPS-9');
      await form(page).getByText('The diff this correction sends (JSON)').click();
      await page.mouse.move(0, 0);
      // The form's card, with its heading and padding, as a reviewer sees it.
      await form(page).locator('xpath=..').screenshot({ path: `test-results/screenshots/correction-field-editor-${theme}.png` });

      const results = await new AxeBuilder({ page }).include('form[aria-label="Correction"]').withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']).analyze();
      const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
      expect(serious).toEqual([]);
    } finally {
      await context.close();
    }
  });
}
