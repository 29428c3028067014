import { expect, test } from './support/test';
import { useSessionOf } from './auth';
import { rowOf, seedIntent, uniqueMarker } from './intents-fixtures';

/**
 * Bulk on everything matching a filter, against a production build at 1366×768: the dialog's counts are the
 * server's, the confirm button waits for a required reason and is on screen, the batch runs server-side with
 * progress and moves exactly the ones that can; the audit page shows it as one batch. Shift-click selects ranges.
 */
test.use({ viewport: { width: 1366, height: 768 } });

test('an operator fails everything matching a search: counts, reason, progress, and the audit', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('batch');
  for (let i = 0; i < 5; i++) await seedIntent('RECEIVED', { order: marker, i });
  for (let i = 0; i < 2; i++) await seedIntent('COMPLETED', { order: marker, i });
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents?q=${marker}`);

  await page.getByTestId('bulk-by-filter').click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Move to').selectOption('FAILED');
  await expect(dialog.getByTestId('batch-movable')).toContainText('5 will move to FAILED');
  await expect(dialog.getByTestId('batch-already')).toContainText('0 already FAILED');
  await expect(dialog.getByTestId('batch-blocked')).toContainText('2 cannot move');
  const confirm = dialog.getByRole('button', { name: 'Move 5 to FAILED' });
  await expect(confirm).toBeDisabled();
  await dialog.getByTestId('batch-reason').fill(`partner outage ${marker}`);
  await expect(confirm).toBeEnabled();
  await expect(confirm).toBeInViewport();
  await page.screenshot({ path: 'test-results/screenshots/intents-bulk-by-filter.png' });
  await confirm.click();

  const progress = page.getByTestId('batch-progress');
  await expect(progress).toHaveAttribute('data-status', 'finished');
  await expect(progress.getByTestId('batch-moved')).toHaveText('5');
  await expect(page.getByRole('row').filter({ hasText: 'FAILED' })).toHaveCount(5);
  await expect(page.getByRole('row').filter({ hasText: 'COMPLETED' })).toHaveCount(2);

  await page.goto('/audit?action=bulk_batch');
  await expect(page.getByTestId('audit-row').first()).toContainText('finished');
  await expect(page.getByTestId('audit-row').first()).toContainText('5 moved');
  await expect(page.getByTestId('audit-row').first()).toContainText(`partner outage ${marker}`);
});

test('a batch that empties its own list still shows how it went', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('batch-empties');
  for (let i = 0; i < 3; i++) await seedIntent('FAILED', { order: marker, i });
  await useSessionOf(context, baseURL!, ['operator']);
  // Every FAILED of this search back to RECEIVED: once moved, none of them is in the list any more.
  await page.goto(`/intents?status=FAILED&q=${marker}`);
  await expect(page.getByRole('row').filter({ hasText: 'FAILED' })).toHaveCount(3);
  await page.getByTestId('bulk-by-filter').click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Move to').selectOption('RECEIVED');
  await dialog.getByTestId('batch-reason').fill(`partner is back ${marker}`);
  await dialog.getByRole('button', { name: 'Move 3 to RECEIVED' }).click();

  await expect(page.getByTestId('no-matches')).toBeVisible();
  const progress = page.getByTestId('batch-progress');
  await expect(progress).toHaveAttribute('data-status', 'finished');
  await expect(progress).toContainText('3 of 3 moved to RECEIVED');
  // Nothing left to change here: the offer goes, the result stays until dismissed.
  await expect(page.getByTestId('bulk-by-filter')).toHaveCount(0);
  await progress.getByRole('button', { name: 'Dismiss' }).click();
  await expect(progress).toHaveCount(0);
});

test('shift-click selects a range of rows', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('range');
  const intents = [];
  for (let i = 0; i < 5; i++) intents.push(await seedIntent('RECEIVED', { order: marker, i }));
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents?q=${marker}`);
  // Newest first: the last seeded is the first row.
  const [first, , , fourth] = [...intents].reverse();
  await rowOf(page, first.id).getByRole('checkbox').click();
  await rowOf(page, fourth.id).getByRole('checkbox').click({ modifiers: ['Shift'] });
  await expect(page.getByRole('region', { name: 'Bulk actions' })).toContainText('4 selected');
});

test('a viewer is offered no bulk change', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/intents');
  await expect(page.getByRole('table', { name: 'Intents' })).toBeVisible();
  await expect(page.getByTestId('bulk-by-filter')).toHaveCount(0);
});
