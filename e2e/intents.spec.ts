import { expect, test } from './support/test';
import { useSessionOf } from './auth';
import { expectLive, rowOf, screenshot, seedIntent, short, uniqueMarker } from './intents-fixtures';

/**
 * The operator's day on the Intents page: filter and search (in the URL, so the view can be shared), open an
 * intent and move it through its statuses, change several at once, and see exactly which ones a bulk change refused.
 */
test('an operator searches and filters, shares the URL, opens an intent and moves it to COMPLETED', async ({ page, context, browser, baseURL }) => {
  // A shared link opened in a second page and a page reload on the way: more than the default minute when the
  // suites run side by side on two cores.
  test.slow();
  const marker = uniqueMarker('e2e-ops');
  const received = await seedIntent('RECEIVED', { marker, kind: 'payment', amount: 10 });
  const normalized = await seedIntent('NORMALIZED', { marker, kind: 'refund', amount: 20 });
  const other = await seedIntent('NORMALIZED', { marker: `${marker}-x`.replace('e2e-ops', 'e2e-zzz'), kind: 'refund' });
  await useSessionOf(context, baseURL!, ['operator']);

  await page.goto('/intents');
  await expect(page.getByRole('heading', { name: 'Intents', level: 1 })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Intents', exact: true }).first()).toHaveAttribute('aria-current', 'page');
  await expect(page.getByTestId('env-badge')).toHaveText(/Development/);

  // Search over the payload text: Enter submits, the URL carries it.
  const search = page.getByRole('searchbox', { name: 'Search payload' });
  await search.fill(marker);
  await search.press('Enter');
  await expect(page).toHaveURL(new RegExp(`[?&]q=${marker}`));
  const table = page.getByRole('table', { name: 'Intents' });
  await expect(table.locator('tbody tr')).toHaveCount(2);
  await expect(rowOf(page, other.id)).toHaveCount(0);
  await expect(page.getByTestId('count-All')).toHaveText('2');
  await expect(page.getByTestId('count-NORMALIZED')).toHaveText('1');
  await expect(page.getByTestId('count-RECEIVED')).toHaveText('1');

  // Status filter: a link, so the filtered view has its own URL.
  await page.getByRole('navigation', { name: 'Filter by status' }).getByRole('link', { name: /^Normalized/ }).click();
  await expect(page).toHaveURL(/status=NORMALIZED/);
  await expect(table.locator('tbody tr')).toHaveCount(1);
  await expect(rowOf(page, normalized.id)).toContainText('NORMALIZED');
  await expect(rowOf(page, received.id)).toHaveCount(0);
  await screenshot(page, 'intents');

  // Someone else opening the shared URL sees the same view.
  const shared = page.url();
  const colleague = await browser.newContext();
  await useSessionOf(colleague, baseURL!, ['viewer']);
  const theirPage = await colleague.newPage();
  await theirPage.goto(shared);
  await expect(theirPage.getByRole('searchbox', { name: 'Search payload' })).toHaveValue(marker);
  await expect(theirPage.getByRole('navigation', { name: 'Filter by status' }).getByRole('link', { name: /^Normalized/ })).toHaveAttribute('aria-current', 'page');
  await expect(theirPage.getByRole('table', { name: 'Intents' }).locator('tbody tr')).toHaveCount(1);
  // A viewer gets no selection checkboxes.
  await expect(theirPage.getByRole('checkbox')).toHaveCount(0);
  await colleague.close();

  // Open it and move it along: only the allowed next steps are offered.
  await rowOf(page, normalized.id).getByRole('link', { name: short(normalized.id) }).click();
  // The list's filters come along, for the page's way back.
  await expect(page).toHaveURL(new RegExp(`/intents/${normalized.id}\\?status=NORMALIZED&q=${marker}$`));
  await expect(page.getByTestId('intent-status')).toHaveText('NORMALIZED');
  const actions = page.getByRole('group', { name: 'Status actions' });
  await expect(actions.getByRole('button')).toHaveText(['Move to PROCESSED', 'Mark as FAILED']);
  await actions.getByRole('button', { name: 'Move to PROCESSED' }).click();
  await expect(page.getByTestId('intent-status')).toHaveText('PROCESSED');
  await expect(page.getByTestId('intent-version')).toHaveText('2');
  await expect(actions.getByRole('button')).toHaveText(['Move to CORRECTED', 'Move to COMPLETED', 'Mark as FAILED']);

  // COMPLETED is final: the console asks first and says so.
  await actions.getByRole('button', { name: 'Move to COMPLETED' }).click();
  const dialog = page.getByRole('dialog', { name: `Move intent ${short(normalized.id)} to COMPLETED?` });
  await expect(dialog).toContainText('COMPLETED is final');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByTestId('intent-status')).toHaveText('PROCESSED');
  await actions.getByRole('button', { name: 'Move to COMPLETED' }).click();
  await dialog.getByRole('button', { name: 'Move to COMPLETED' }).click();
  await expect(page.getByTestId('intent-status')).toHaveText('COMPLETED');
  await expect(actions).toContainText('COMPLETED is final');
  const timeline = page.getByRole('list', { name: 'Timeline, newest first' });
  await expect(timeline.locator('[data-kind="created"], [data-kind="status_change"]')).toHaveCount(4);
  await expect(timeline.locator('[data-kind="status_change"]').first()).toContainText('PROCESSED → COMPLETED');
  await screenshot(page, 'intent-completed');
});

test('an operator bulk-completes several intents, and a refused bulk change names each intent and changes none', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('e2e-bulk');
  const ready = [
    await seedIntent('PROCESSED', { marker, n: 1 }),
    await seedIntent('PROCESSED', { marker, n: 2 }),
    await seedIntent('CORRECTED', { marker, n: 3 }),
  ];
  const early = await seedIntent('RECEIVED', { marker, n: 4 });
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents?q=${marker}`);
  await expectLive(page);

  for (const intent of ready) await page.getByRole('checkbox', { name: `Select intent ${short(intent.id)}` }).check();
  const bar = page.getByRole('region', { name: 'Bulk actions' });
  await expect(bar).toContainText('3 selected');
  // A selection pauses live refresh, so rows never move under the cursor.
  await expect(page.getByTestId('live-indicator')).toHaveAttribute('data-state', 'paused');
  await bar.getByLabel('Move to').selectOption('COMPLETED');
  await bar.getByRole('button', { name: 'Change status…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Move 3 intents to COMPLETED?' });
  await expect(dialog).toContainText('All 3 change together or none does');
  await screenshot(page, 'intents-bulk-confirm');
  await dialog.getByRole('button', { name: 'Move 3 to COMPLETED' }).click();
  await expect(page.getByRole('status').filter({ hasText: '3 intents now COMPLETED' })).toBeVisible();
  for (const intent of ready) await expect(rowOf(page, intent.id)).toContainText('COMPLETED');
  await expect(rowOf(page, early.id)).toContainText('RECEIVED');
  await expect(page.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live');

  // Completed ones cannot move again and RECEIVED cannot jump to COMPLETED: all refused, each named, none changed.
  await page.getByRole('checkbox', { name: `Select intent ${short(early.id)}` }).check();
  await page.getByRole('checkbox', { name: `Select intent ${short(ready[0].id)}` }).check();
  await bar.getByLabel('Move to').selectOption('NORMALIZED');
  await bar.getByRole('button', { name: 'Change status…' }).click();
  await page.getByRole('dialog', { name: 'Move 2 intents to NORMALIZED?' }).getByRole('button', { name: 'Move 2 to NORMALIZED' }).click();
  const errors = page.getByTestId('bulk-errors');
  await expect(errors).toContainText('Nothing was changed');
  await expect(errors.getByRole('listitem')).toHaveCount(1);
  await expect(errors).toContainText(`${short(ready[0].id)} is COMPLETED: it is final`);
  await screenshot(page, 'intents-bulk-refused');
  await expect(rowOf(page, early.id)).toContainText('RECEIVED');
});

test('the shell: skip link, keyboard search, and a dark theme that stays chosen', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/intents');
  // The first Tab reaches the skip link, which jumps past the navigation.
  await page.keyboard.press('Tab');
  const skip = page.getByRole('link', { name: 'Skip to content' });
  await expect(skip).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.locator('main#main')).toBeFocused();
  // "/" focuses the search from anywhere on the page.
  await page.keyboard.press('/');
  await expect(page.getByRole('searchbox', { name: 'Search payload' })).toBeFocused();
  await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workers' })).toHaveAttribute('href', '/workers');

  const themes = page.getByRole('radiogroup', { name: 'Colour theme' });
  await themes.getByRole('radio', { name: 'Dark' }).click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await page.reload();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await expect(themes.getByRole('radio', { name: 'Dark' })).toHaveAttribute('aria-checked', 'true');
  await expectLive(page);
  await screenshot(page, 'intents-dark');
  await themes.getByRole('radio', { name: 'Light' }).click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
});

test('a bulk change says which selected intents can move where, and applies once the ones that cannot are deselected', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('e2e-bulkplan');
  const received = [await seedIntent('RECEIVED', { marker, n: 1 }), await seedIntent('RECEIVED', { marker, n: 2 })];
  const completed = await seedIntent('COMPLETED', { marker, n: 3 });
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents?q=${marker}`);
  await expectLive(page);
  const refresh = page.getByRole('combobox', { name: 'Refresh' });
  await expect(refresh).toHaveValue('live');
  await expect(refresh).toBeEnabled();

  for (const intent of received) await page.getByRole('checkbox', { name: `Select intent ${short(intent.id)}` }).check();
  const bar = page.getByRole('region', { name: 'Bulk actions' });
  const moveTo = bar.getByRole('combobox', { name: 'Move to' });
  // Every one of them is RECEIVED: the one forward step is offered first, never the final COMPLETED.
  await expect(moveTo).toHaveValue('NORMALIZED');
  await expect(moveTo.locator('option[value="NORMALIZED"]')).toHaveText('NORMALIZED — all 2 can move');
  await expect(moveTo.locator('option[value="COMPLETED"]')).toHaveText('COMPLETED — none can move');
  await expect(moveTo.locator('option[value="COMPLETED"]')).toBeDisabled();
  // The selection pauses the list, and the refresh control says so instead of "Live".
  await expect(page.getByTestId('live-indicator')).toHaveAttribute('data-state', 'paused');
  await expect(refresh).toBeDisabled();
  await expect(refresh.locator('option:checked')).toHaveText('Paused while rows are selected');

  // A COMPLETED one joins: no status suits all three any more, so nothing is preselected; the counts say why.
  await page.getByRole('checkbox', { name: `Select intent ${short(completed.id)}` }).check();
  await expect(bar).toContainText('3 selected');
  await expect(moveTo).toHaveValue('');
  await expect(bar.getByRole('button', { name: 'Change status…' })).toBeDisabled();
  await expect(moveTo.locator('option[value="NORMALIZED"]')).toHaveText('NORMALIZED — 2 of 3 can move');
  await expect(moveTo.locator('option[value="FAILED"]')).toHaveText('FAILED — 2 of 3 can move');
  await expect(moveTo.locator('option[value="COMPLETED"]')).toHaveText('COMPLETED — none can move');

  await moveTo.selectOption('NORMALIZED');
  await bar.getByRole('button', { name: 'Change status…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Move 3 intents to NORMALIZED?' });
  await expect(dialog.getByTestId('bulk-blocked-warning')).toContainText('1 of 3 cannot move to NORMALIZED');
  await expect(dialog.getByTestId('bulk-blocked-warning')).toContainText('all-or-nothing');
  const willMove = dialog.getByRole('list', { name: 'Will move' });
  const cannotMove = dialog.getByRole('list', { name: 'Cannot move' });
  await expect(willMove.getByRole('listitem')).toHaveText(received.map((i) => `${short(i.id)} RECEIVED → NORMALIZED`));
  await expect(cannotMove.getByRole('listitem')).toHaveText([`${short(completed.id)} is COMPLETED: it is final`]);
  await screenshot(page, 'intents-bulk-blocked');

  // Deselect the one that cannot move, from the dialog: it now moves the other two, and says so.
  await dialog.getByRole('button', { name: 'Deselect the 1 that cannot move' }).click();
  const cleaned = page.getByRole('dialog', { name: 'Move 2 intents to NORMALIZED?' });
  await expect(cleaned.getByRole('status')).toContainText(`Deselected ${short(completed.id)}`);
  await expect(cleaned.getByRole('status')).toBeFocused();
  await expect(cleaned.getByRole('list', { name: 'Cannot move' })).toHaveCount(0);
  await expect(cleaned.getByTestId('bulk-blocked-warning')).toHaveCount(0);
  await expect(cleaned).toContainText('All 2 change together or none does');
  await expect(page.getByRole('checkbox', { name: `Select intent ${short(completed.id)}` })).not.toBeChecked();
  await cleaned.getByRole('button', { name: 'Move 2 to NORMALIZED' }).click();
  await expect(page.getByRole('status').filter({ hasText: '2 intents now NORMALIZED' })).toBeVisible();
  for (const intent of received) await expect(rowOf(page, intent.id)).toContainText('NORMALIZED');
  await expect(rowOf(page, completed.id)).toContainText('COMPLETED');
  // The selection is gone: live again, and the control agrees.
  await expect(page.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live');
  await expect(refresh).toBeEnabled();
  await expect(refresh).toHaveValue('live');
});

test('the shell at 800 px: a compact bar across the top, one main landmark, no sideways scroll on any page', async ({ page, context, browser, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer', 'oncall']);
  await page.setViewportSize({ width: 800, height: 1000 });
  const signedOut = await browser.newContext({ baseURL, viewport: { width: 800, height: 1000 } });
  const anonymous = await signedOut.newPage();
  try {
    for (const [p, path] of [
      [page, '/intents'],
      [page, '/locks'],
      [page, '/contention'],
      [page, '/replay'],
      [page, '/events'],
      [page, '/audit'],
      [page, '/workers'],
      [anonymous, '/sign-in'],
    ] as const) {
      await p.goto(path);
      await expect(p.getByRole('heading', { level: 1 }).first()).toBeVisible();
      // The sidebar turns into a bar above the page: its sections in a row, not a full-height column beside it.
      const nav = p.getByRole('navigation', { name: 'Main' });
      // Signed out, the bar lists only the references (the sections would lead back to the sign-in page).
      await expect(nav.getByRole('link', { name: p === anonymous ? 'API reference' : 'Locks' })).toBeVisible();
      const bar = await nav.boundingBox();
      expect(bar!.height, `${path}: the navigation is one row`).toBeLessThan(60);
      // Every link of it in sight, the last included: none cut off at the edge.
      const last = await nav.getByRole('link').last().boundingBox();
      expect(last!.x + last!.width, `${path}: the last link fits`).toBeLessThanOrEqual(800);
      expect((await p.getByRole('complementary').boundingBox())!.height, `${path}: the bar is compact`).toBeLessThan(140);
      await expect(p.getByRole('main'), `${path}: one main landmark`).toHaveCount(1);
      const { scrollWidth, innerWidth } = await p.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
      expect(scrollWidth, `${path}: no horizontal scroll at 800 px`).toBeLessThanOrEqual(innerWidth);
    }
  } finally {
    await signedOut.close();
  }
});

test('a link whose filter cannot be read says what was not applied, and offers no bulk change of the wider list', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['operator']);
  const marker = uniqueMarker('IGNORED');
  await seedIntent('FAILED', { order: marker });
  await page.goto('/intents?status=BOGUS&stuck=7y');
  const alert = page.getByTestId('ignored-filters');
  await expect(alert).toContainText('Part of this link’s filter was not applied');
  await expect(alert).toContainText('status=BOGUS: must be one of RECEIVED, NORMALIZED');
  await expect(alert).toContainText('stuck=7y: must be a duration such as 15m, 1h, 4h or 1d');
  await expect(page.getByRole('button', { name: /^Change all/ })).toHaveCount(0);
  // A status typed in lower case is read as meant.
  await page.goto('/intents?status=failed');
  await expect(page.getByTestId('ignored-filters')).toHaveCount(0);
  await expect(page.getByRole('button', { name: /^Change all/ })).toBeVisible();
  // The oldest of a final status is not "waiting", and it is read over the whole status, not the search: said so.
  await page.goto(`/intents?status=FAILED&q=${marker}`);
  await expect(page.getByTestId('oldest-waiting')).toContainText('Oldest in FAILED, all of it, not only this search:');
});
