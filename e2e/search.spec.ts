import { expect, test } from './support/test';
import { useSessionOf } from './auth';
import { rowOf, screenshot, seedIntent, short, uniqueMarker } from './intents-fixtures';

/**
 * Search that takes what people paste: an id (whole or as the table shows it) opens the intent; payload text as the
 * table displays it, or raw JSON in any spacing, finds the rows and marks the match; a source is recognised; the
 * source and time filters live in the URL.
 */
test('an operator pastes ids, displayed text, JSON and a source into the search', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('e2e-search');
  const city = `Town${marker.slice(-6)}`;
  const source = `src-${marker.slice(-8)}`;
  const osaka = await seedIntent('RECEIVED', { marker, kind: 'payment', amount: 629.13, customer: { id: 'C8919', city } }, source);
  const other = await seedIntent('FAILED', { marker, kind: 'refund', amount: 12.5, customer: { id: 'C1000', city: 'Elsewhere' } }, source);
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/intents');
  const search = page.getByRole('searchbox', { name: 'Search payload' });

  // The short id as the table shows it: straight to the intent.
  await search.fill(short(osaka.id));
  await search.press('Enter');
  await expect(page).toHaveURL(new RegExp(`/intents/${osaka.id}$`));
  // And as a link someone pasted.
  await page.goto(`/intents/${short(other.id)}`);
  await expect(page).toHaveURL(new RegExp(`/intents/${other.id}$`));

  // Payload text as displayed: the row, with the match marked.
  await page.goto('/intents');
  await page.getByRole('searchbox', { name: 'Search payload' }).fill(`city: ${city}`);
  await page.getByRole('searchbox', { name: 'Search payload' }).press('Enter');
  await expect(page).toHaveURL(/[?&]q=city/);
  const table = page.getByRole('table', { name: 'Intents' });
  await expect(table.locator('tbody tr')).toHaveCount(1);
  await expect(rowOf(page, osaka.id).locator('mark')).toContainText(city);
  await expect(page.getByTestId('count-All')).toHaveText('1');
  await expect(page.getByTestId('search-kind')).toHaveText('Matched in the payload');
  await screenshot(page, 'intents-search');

  // Raw JSON, spaced any way.
  await page.goto(`/intents?${new URLSearchParams({ q: `{ "city" :"${city}" ,  "id": "C8919" }` })}`);
  await expect(table.locator('tbody tr')).toHaveCount(1);
  await expect(rowOf(page, osaka.id)).toBeVisible();
  await page.goto(`/intents?${new URLSearchParams({ q: `amount: 629.13 · city: ${city}` })}`);
  await expect(rowOf(page, osaka.id)).toBeVisible();

  // A source by its name: both of its intents, the source marked; then narrowed by status through the tabs.
  await page.goto(`/intents?${new URLSearchParams({ q: source })}`);
  await expect(page.getByTestId('search-kind')).toHaveText('Matched as a source');
  await expect(table.locator('tbody tr')).toHaveCount(2);
  await expect(rowOf(page, other.id).locator('mark')).toHaveText(source);
  await page.getByRole('navigation', { name: 'Filter by status' }).getByRole('link', { name: /^Failed/ }).click();
  await expect(table.locator('tbody tr')).toHaveCount(1);
  await expect(rowOf(page, other.id)).toBeVisible();

  // The source and time-range filters, from the form, into the URL.
  await page.goto('/intents');
  await page.getByRole('textbox', { name: 'Source' }).fill(source);
  await page.getByLabel('Updated from').fill('2020-01-01T00:00');
  await page.getByRole('searchbox', { name: 'Search payload' }).press('Enter');
  await expect(page).toHaveURL(new RegExp(`[?&]source=${source}`));
  await expect(page).toHaveURL(/[?&]from=2020-01-01/);
  await expect(table.locator('tbody tr')).toHaveCount(2);

  // Too short to search the payload: said so, not a scan.
  await page.goto('/intents?q=xy');
  await expect(page.getByText(/needs at least 3 characters/).first()).toBeVisible();
});

test('the time range is typed and shown in UTC, as every time in the console, whatever the browser’s zone', async ({ browser, baseURL }) => {
  const context = await browser.newContext({ timezoneId: 'Asia/Tokyo' });
  await useSessionOf(context, baseURL!, ['viewer']);
  const page = await context.newPage();
  await page.goto('/intents');
  await page.getByLabel('Updated from (UTC)').fill('2026-03-01T09:30');
  await page.getByLabel('to (UTC)').fill('2026-03-01T18:00');
  await page.getByRole('searchbox', { name: 'Search payload' }).press('Enter');
  await expect(page).toHaveURL((url) => url.searchParams.get('from') === '2026-03-01T09:30:00.000Z' && url.searchParams.get('to') === '2026-03-01T18:00:00.000Z');
  // A link with a range fills the boxes with the same UTC times.
  await page.reload();
  await expect(page.getByLabel('Updated from (UTC)')).toHaveValue('2026-03-01T09:30');
  await expect(page.getByLabel('to (UTC)')).toHaveValue('2026-03-01T18:00');
  await context.close();
});
