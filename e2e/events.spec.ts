import { expect, test } from '@playwright/test';
import { useSessionOf } from './auth';
import { screenshot, seedIntent, uniqueMarker } from './intents-fixtures';

/**
 * The Events page: the outbox's backlog, lag and relays as tiles, and a plain statement when no relay can run. The
 * browser tests start no NATS, so unless the shell running them sets NATS_URL the relay is off and every new change
 * waits in the outbox, where the backlog tile counts it.
 */
test('the Events page shows the outbox backlog, its lag and the relays, and says when the relay is off', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/events');
  await expect(page.getByRole('heading', { name: 'Events', level: 1 })).toBeVisible();
  const status = (await (await page.request.get('/api/console/events')).json()) as { relayConfigured: boolean; stream: { name: string; subjects: string[] } };
  // The stream and subjects this environment publishes to, as configured (EVENTS_STREAM, EVENTS_SUBJECT_PREFIX).
  await expect(page.locator('body')).toContainText(`stream ${status.stream.name}, subjects ${status.stream.subjects.join(', ')}`);
  const tiles = page.getByLabel('Outbox relay');
  await expect(tiles).toContainText(/waiting/);
  await expect(tiles).toContainText('published in the last minute');
  const backlog = async () => Number((await page.getByTestId('outbox-backlog').textContent())?.replace(/,/g, ''));
  await expect.poll(backlog).toBeGreaterThanOrEqual(0);
  await expect(page.getByRole('heading', { name: 'Relays', level: 2 })).toBeVisible();
  if (status.relayConfigured) return;

  await expect(page.getByRole('status')).toContainText('The relay is off');
  await expect(page.getByText('No relay is connected.')).toBeVisible();
  const before = await backlog();
  await seedIntent('RECEIVED', { marker: uniqueMarker('e2e-events') });
  // The page polls every 2 s; a new intent is one more event waiting.
  await expect.poll(backlog, { timeout: 10_000 }).toBeGreaterThan(before);
  await expect(page.getByTestId('outbox-lag')).not.toHaveText('none');
  await screenshot(page, 'events');
});
