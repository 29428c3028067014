import { expect, test, type Locator, type Page } from './support/test';
import { db } from '../lib/db/client';
import { apiTokenFor, useSessionOf } from './auth';
import { rowOf, screenshot, seedIntent, short, uniqueMarker } from './intents-fixtures';

/**
 * What operators on the Intents list asked for first: an id prefix of any length, a hint when nothing matches,
 * short ids in the API, back links and previous/next that keep the list's filters, oldest first and the stuck view
 * with the oldest waiting intent (here and on Workers), the keyboard, and a phone's width.
 */

/**
 * A chosen link (aria-current) is painted unlike one of its unchosen neighbours, with the pointer away from both: the
 * announced choice must also be the one a sighted user sees.
 */
async function expectDrawnChosen(page: Page, chosen: Locator, other: Locator): Promise<void> {
  await page.mouse.move(0, 0);
  const background = (link: Locator) => link.evaluate((e) => getComputedStyle(e).backgroundColor);
  expect(await background(chosen)).not.toBe(await background(other));
}

/** Moves an intent's last change back in time, as a crash-recovery test moves a heartbeat: by SQL, not by waiting. */
async function lastChangedAgo(id: string, minutes: number): Promise<void> {
  await db().$executeRaw`UPDATE intents SET updated_at = now() - ${minutes} * interval '1 minute' WHERE id = ${id}::uuid`;
}

test('an id prefix of any length finds the intent; nothing found says what the search takes and offers no bulk change', async ({ page, context, baseURL, request }) => {
  const intent = await seedIntent('RECEIVED', { marker: uniqueMarker('e2e-prefix') });
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents?q=${intent.id.slice(0, 4)}`);
  await expect(rowOf(page, intent.id)).toBeVisible();
  await expect(rowOf(page, intent.id).locator('mark').first()).toHaveText(intent.id.slice(0, 4));
  await expect(page.getByTestId('search-kind')).toHaveText('Ids that start so, and payloads that contain it');

  await page.goto(`/intents?q=${uniqueMarker('nothing')}&status=FAILED`);
  await expect(page.getByTestId('no-matches')).toContainText('The search takes an id');
  await expect(page.getByRole('button', { name: /Change all matching/ })).toHaveCount(0);
  await page.getByRole('link', { name: /in every status, source and time/ }).click();
  await expect(page).not.toHaveURL(/status=FAILED/);

  // The API takes the short id the console shows.
  const { authorization } = await apiTokenFor(['viewer']);
  const res = await request.get(`/api/intents/${short(intent.id)}`, { headers: { authorization } });
  expect(res.status()).toBe(200);
  expect(await res.json()).toMatchObject({ id: intent.id });
});

test("the intent page's back link and previous/next keep the list's filters and order", async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('e2e-nav');
  const first = await seedIntent('RECEIVED', { marker, n: 1 });
  const second = await seedIntent('RECEIVED', { marker, n: 2 });
  const third = await seedIntent('RECEIVED', { marker, n: 3 });
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto(`/intents?status=RECEIVED&q=${marker}&order=oldest`);
  await expect(page.getByRole('table', { name: 'Intents' }).locator('tbody tr')).toHaveCount(3);
  await rowOf(page, first.id).getByRole('link', { name: short(first.id) }).click();
  await expect(page).toHaveURL(new RegExp(`/intents/${first.id}\\?status=RECEIVED&q=${marker}&order=oldest$`));
  const nav = page.getByRole('navigation', { name: 'Intents list' });
  await expect(nav.getByRole('link', { name: 'Intents' })).toHaveAttribute('href', `/intents?status=RECEIVED&q=${marker}&order=oldest`);
  await expect(nav.getByRole('link', { name: '← Previous' })).toHaveCount(0);
  await nav.getByRole('link', { name: 'Next →' }).click();
  await expect(page).toHaveURL(new RegExp(`/intents/${second.id}\\?`));
  await page.getByRole('navigation', { name: 'Intents list' }).getByRole('link', { name: 'Next →' }).click();
  await expect(page).toHaveURL(new RegExp(`/intents/${third.id}\\?`));
  await expect(page.getByRole('navigation', { name: 'Intents list' }).getByRole('link', { name: 'Next →' })).toHaveCount(0);
  await page.getByRole('navigation', { name: 'Intents list' }).getByRole('link', { name: '← Previous' }).click();
  await expect(page).toHaveURL(new RegExp(`/intents/${second.id}\\?`));
  await page.getByRole('navigation', { name: 'Intents list' }).getByRole('link', { name: 'Intents' }).click();
  await expect(page).toHaveURL(new RegExp(`/intents\\?status=RECEIVED&q=${marker}&order=oldest$`));
  await expect(page.getByRole('searchbox', { name: 'Search payload' })).toHaveValue(marker);
});

test('oldest first, the stuck view and the oldest waiting intent, on Intents and on Workers', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('e2e-stuck');
  const stuck = await seedIntent('NORMALIZED', { marker, kind: 'stuck' });
  const older = await seedIntent('RECEIVED', { marker, kind: 'stuck, longer' });
  const fresh = await seedIntent('RECEIVED', { marker, kind: 'fresh' });
  const done = await seedIntent('COMPLETED', { marker, kind: 'done' });
  await lastChangedAgo(stuck.id, 90);
  await lastChangedAgo(older.id, 400 * 24 * 60);
  // Due in the queue as long as it has waited: the Workers page's oldest ready intent, whatever else the run made.
  await db().$executeRaw`UPDATE intent_work SET run_after = now() - interval '400 days' WHERE intent_id = ${older.id}::uuid`;
  await lastChangedAgo(done.id, 500 * 24 * 60);
  await useSessionOf(context, baseURL!, ['operator']);

  await page.goto(`/intents?q=${marker}`);
  const waiting = page.getByTestId('oldest-waiting');
  const oldestFirst = waiting.getByRole('navigation', { name: 'Order' }).getByRole('link', { name: 'Oldest first' });
  // With no order in the address the list is newest first, and that choice is announced and drawn as chosen.
  const newestFirst = waiting.getByRole('navigation', { name: 'Order' }).getByRole('link', { name: 'Newest first' });
  await expect(newestFirst).toHaveAttribute('aria-current', 'page');
  await expectDrawnChosen(page, newestFirst, oldestFirst);
  // A click that lands while the page is still hydrating can be lost: click until the address says so.
  await expect(async () => {
    if (!/order=oldest/.test(page.url())) await oldestFirst.click();
    await expect(page).toHaveURL(/order=oldest/, { timeout: 2_000 });
  }).toPass();
  const rows = page.getByRole('table', { name: 'Intents' }).locator('tbody tr');
  await expect(rows).toHaveCount(4);
  await expect(rows.nth(0)).toHaveAttribute('data-intent-id', done.id);
  await expect(rows.nth(3)).toHaveAttribute('data-intent-id', fresh.id);

  const stuckFor = waiting.getByRole('navigation', { name: 'Stuck intents' });
  await stuckFor.getByRole('link', { name: '1h' }).click();
  await expect(page).toHaveURL(/stuck=1h/);
  await expect(stuckFor.getByRole('link', { name: '1h' })).toHaveAttribute('aria-current', 'page');
  await expect(stuckFor.getByRole('link', { name: '15m' })).not.toHaveAttribute('aria-current');
  await expectDrawnChosen(page, stuckFor.getByRole('link', { name: '1h' }), stuckFor.getByRole('link', { name: '15m' }));
  // Not COMPLETED, unchanged for more than an hour, the longest waiting first; the counts are the stuck view's.
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(0)).toHaveAttribute('data-intent-id', older.id);
  await expect(rows.nth(1)).toHaveAttribute('data-intent-id', stuck.id);
  await expect(page.getByTestId('count-All')).toHaveText('2');
  await expect(page.getByTestId('count-COMPLETED')).toHaveText('0');
  await expect(page.getByText('unchanged for more than 1h, not COMPLETED')).toBeVisible();

  // The oldest waiting intent of the RECEIVED tab: the one unchanged for 400 days.
  await page.goto('/intents?status=RECEIVED&stuck=1h&order=oldest');
  await expect(page.getByTestId('oldest-waiting')).toContainText(`Oldest waiting in RECEIVED: ${short(older.id)}, RECEIVED, last changed`);
  await screenshot(page, 'intents-stuck');

  // Workers: how long the oldest due intent has waited for a worker (none run in the browser tests).
  await page.goto('/workers');
  await expect(page.getByTestId('oldest-ready')).toContainText('400 days ago');
  await screenshot(page, 'workers-oldest-ready');
});

test('the keyboard: a skip link to the results, j/k and the arrow keys between rows, Enter to open', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('e2e-keys');
  const newer = await seedIntent('RECEIVED', { marker, n: 1 });
  const newest = await seedIntent('RECEIVED', { marker, n: 2 });
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents?q=${marker}`);
  await expect(rowOf(page, newer.id)).toBeVisible();

  // From the top of the page: skip to the content, skip to the results, first row. Five keys, not forty.
  await page.keyboard.press('Tab');
  await expect(page.getByRole('link', { name: 'Skip to content' })).toBeFocused();
  await page.keyboard.press('Enter');
  await page.keyboard.press('Tab');
  await expect(page.getByRole('link', { name: 'Skip to the results' })).toBeFocused();
  await page.keyboard.press('Enter');
  await page.keyboard.press('j');
  await expect(rowOf(page, newest.id)).toBeFocused();
  await page.keyboard.press('ArrowDown');
  await expect(rowOf(page, newer.id)).toBeFocused();
  await page.keyboard.press('k');
  await expect(rowOf(page, newest.id)).toBeFocused();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowUp');
  await expect(rowOf(page, newest.id)).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(new RegExp(`/intents/${newest.id}\\?q=${marker}$`));
});

test('a phone’s width: the Intents table and the Locks page fit 390 px without sideways scrolling', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('e2e-narrow');
  const intent = await seedIntent('PROCESSED', { marker, kind: 'payment', amount: 629.13, customer: { id: 'C8919', city: 'Osaka' }, note: 'a payload long enough to need the whole width of a phone' });
  await useSessionOf(context, baseURL!, ['operator', 'oncall']);
  await page.setViewportSize({ width: 390, height: 844 });

  await page.goto(`/intents?q=${marker}`);
  const row = rowOf(page, intent.id);
  await expect(row).toBeVisible();
  const widths = async () => page.evaluate(() => ({ page: document.documentElement.scrollWidth, wrap: document.getElementById('intent-results')!.scrollWidth, wrapClient: document.getElementById('intent-results')!.clientWidth }));
  const intents = await widths();
  expect(intents.page).toBeLessThanOrEqual(390);
  expect(intents.wrap).toBeLessThanOrEqual(intents.wrapClient);
  // Every cell of the row is on screen: version and payload included.
  for (const cell of await row.locator('td').all()) {
    const box = (await cell.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(390);
  }
  await expect(row.getByText('v2')).toBeVisible();
  await screenshot(page, 'intents-390');

  await page.goto('/locks');
  await expect(page.getByTestId('leases-section')).toBeVisible();
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  const leases = (await page.getByTestId('leases-section').boundingBox())!;
  expect(leases.x + leases.width).toBeLessThanOrEqual(390);
  await screenshot(page, 'locks-390');
});
