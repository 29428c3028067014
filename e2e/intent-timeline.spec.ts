import { expect, test } from './support/test';
import { acquireLease } from '../lib/leases/service';
import { editLeaseResource } from '../lib/leases/edit-names';
import { updateIntentStatus } from '../lib/intents/commands';
import { VersionConflictError } from '../lib/intents/errors';
import { apiTokenFor, useSessionOf } from './auth';
import { expectLive, seedIntent, uniqueMarker } from './intents-fixtures';

/**
 * The intent page's one timeline: every kind of history in one list, a filter by kind, each entry opening where
 * it lives, and a change made elsewhere appearing without a reload.
 */

test('the intent page shows one timeline, filterable by kind, each entry linking to where it lives', async ({ page, context, baseURL, request }) => {
  const marker = uniqueMarker('e2e-timeline');
  const intent = await seedIntent('PROCESSED', { marker, amount: 10 });
  const reviewer = { name: 'e2e-reviewer' };
  await acquireLease(editLeaseResource(intent.id), { owner: reviewer.name, ttlMs: 60_000 }, { ...reviewer, userId: 'e2e-reviewer', roles: ['reviewer'], via: 'session', credentialId: 'e2e-reviewer-session' });
  await expect(updateIntentStatus({ id: intent.id, status: 'COMPLETED', expectedVersion: 0 }, reviewer)).rejects.toBeInstanceOf(VersionConflictError);

  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto(`/intents/${intent.id}`);
  const timeline = page.getByRole('list', { name: 'Timeline, newest first' });
  const entries = timeline.getByTestId('timeline-entry');
  await expect(timeline.locator('[data-kind="status_change"]')).toHaveCount(2);
  await expect(timeline.locator('[data-kind="created"]')).toHaveCount(1);
  await expect(timeline.locator('[data-kind="conflict"]')).toContainText('expected version 0');
  await expect(timeline.locator('[data-kind="lease"]')).toContainText('Edit lease granted');
  await expect(timeline.locator('[data-kind="event_out"]')).toHaveCount(4);

  // A change made elsewhere appears on its own (the live feed), newest first.
  await expectLive(page);
  const { authorization } = await apiTokenFor(['reviewer']);
  const res = await request.post(`/api/intents/${intent.id}/reeval`, { headers: { authorization }, data: { diff: { amount: 11 }, source: 'partner-file', reason: `fee ${marker}` } });
  expect(res.status()).toBe(200);
  await expect(timeline.locator('[data-kind="correction"]')).toContainText(`fee ${marker}`);

  await page.getByRole('region', { name: /^Timeline/ }).screenshot({ path: `test-results/screenshots/intent-timeline.png` });

  // Filter: hide events sent out, then show only status changes.
  const total = await entries.count();
  await page.getByTestId('timeline-filter-event_out').uncheck();
  await expect(entries).toHaveCount(total - 5);
  await expect(timeline.locator('[data-kind="event_out"]')).toHaveCount(0);
  await page.getByLabel('Show only one kind').selectOption('status_change');
  await expect(entries).toHaveCount(2);
  await expect(entries.first()).toContainText('NORMALIZED → PROCESSED');
  await page.screenshot({ path: `test-results/screenshots/intent-timeline-filtered.png`, fullPage: true });
  await page.getByRole('button', { name: 'Show all' }).click();
  await expect(entries).toHaveCount(total);

  // An entry opens where it lives: a status change in the audit log, filtered to this intent and action.
  await timeline.locator('[data-kind="status_change"]').first().getByTestId('timeline-link').click();
  await expect(page).toHaveURL((url) => url.pathname === '/audit' && url.searchParams.get('intent') === intent.id && url.searchParams.get('action') === 'status_change');
  await expect(page.getByTestId('audit-row').first()).toContainText('NORMALIZED → PROCESSED');
});
