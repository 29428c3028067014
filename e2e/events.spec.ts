import { expect, expectHydrated, test } from './support/test';
import { db } from '../lib/db/client';
import { reevaluateIntent, updateIntentStatus } from '../lib/intents/commands';
import { useSessionOf } from './auth';
import { screenshot, seedIntent, uniqueMarker } from './intents-fixtures';
import { expectConsoleFields } from './support/console-fields';

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

  await expect(page.getByRole('status')).toContainText('No relay is connected and this console has no NATS_URL');
  await expect(page.getByText('No relay is connected.')).toBeVisible();
  const before = await backlog();
  await seedIntent('RECEIVED', { marker: uniqueMarker('e2e-events') });
  // The page polls every 2 s; a new intent is one more event waiting.
  await expect.poll(backlog, { timeout: 10_000 }).toBeGreaterThan(before);
  await expect(page.getByTestId('outbox-lag')).not.toHaveText('none');
  await screenshot(page, 'events');
});

/**
 * The browser of recent events: one intent's 26 events (a page and one more), some of them marked published as a
 * relay would, browsed by intent, type and state; a payload opened; the intent, the events reference and the API
 * reference followed.
 */
test('the Events page browses recent events by intent, type and state, opens a payload and leads to the intent and the references', async ({ page, context, baseURL }) => {
  // Eleven page loads, Swagger UI among them: more than the default minute on a machine shared with other runs.
  test.setTimeout(180_000);
  await useSessionOf(context, baseURL!, ['viewer']);
  const intent = await historyOf26Events(uniqueMarker('e2e-browse'));
  const relayConfigured = ((await (await page.request.get('/api/console/events')).json()) as { relayConfigured: boolean }).relayConfigured;
  // The ten oldest went out (unless a real relay runs here and publishes them all).
  if (!relayConfigured) {
    await db().$executeRaw`
      UPDATE outbox_events SET published_at = now(), stream_seq = 424200 + id % 100
      WHERE id IN (SELECT id FROM outbox_events WHERE ordering_key = ${intent.id} ORDER BY id LIMIT 10)`;
  }

  await page.goto('/events');
  const browser = page.getByRole('region', { name: 'Recent events' });
  await expect(browser.getByTestId('event-row').first()).toBeVisible();
  const filters = browser.getByRole('form', { name: 'Event filters' });
  await expectConsoleFields(filters);
  await filters.getByLabel('Intent id').fill(intent.id);
  await filters.getByRole('button', { name: 'Apply' }).click();
  await expect(page).toHaveURL(new RegExp(`[?&]intent=${intent.id}`));
  // The filters are a plain GET form: Apply loaded a new document, whose payload buttons work once it has hydrated.
  await expectHydrated(page);

  // Newest first: the refused change, the correction, then the status changes; a page of 25, then the 26th.
  const rows = browser.getByTestId('event-row');
  await expect(rows).toHaveCount(25);
  await expect(rows.nth(0)).toHaveAttribute('data-type', 'evt.intent.conflict');
  await expect(rows.nth(1)).toHaveAttribute('data-type', 'evt.intent.corrected');
  await expect(rows.nth(2)).toHaveAttribute('data-type', 'evt.intent.status_changed');
  if (!relayConfigured) {
    await expect(rows.nth(0)).toHaveAttribute('data-state', 'waiting');
    await expect(rows.nth(24)).toHaveAttribute('data-state', 'published');
    await expect(rows.nth(24)).toContainText(/published\s+seq 4242\d\d/);
  }

  // The payload: the message as other services receive it.
  const first = rows.nth(0);
  await first.getByRole('button', { name: /^Payload of event/ }).click();
  await expect(first.getByRole('button', { name: /^Hide payload of event/ })).toHaveAttribute('aria-expanded', 'true');
  const payload = browser.getByRole('figure', { name: /^Payload of event/ });
  await expect(payload).toBeVisible();
  await expect(payload).toContainText(`"intentId": "${intent.id}"`);
  await expect(payload).toContainText('"type": "evt.intent.conflict"');
  await expect(payload).toContainText('"expectedVersion": 0');
  await screenshot(page, 'events-browser');

  await browser.getByRole('navigation', { name: 'Event pages' }).getByRole('link', { name: 'Older →' }).click();
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute('data-type', 'evt.intent.created');
  await browser.getByRole('navigation', { name: 'Event pages' }).getByRole('link', { name: '← Newest' }).click();
  await expect(rows).toHaveCount(25);

  // By type, and by state, the intent filter kept.
  await filters.getByLabel('Type').selectOption('evt.intent.corrected');
  await filters.getByRole('button', { name: 'Apply' }).click();
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute('data-type', 'evt.intent.corrected');
  if (!relayConfigured) {
    await filters.getByLabel('Type').selectOption('');
    await filters.getByLabel('State').selectOption('published');
    await filters.getByRole('button', { name: 'Apply' }).click();
    await expect(rows).toHaveCount(10);
    for (const state of await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-state')))) expect(state).toBe('published');
  }

  // The intent the event is about.
  await rows.first().getByRole('link', { name: intent.id.slice(0, 8) }).click();
  await expect(page).toHaveURL(new RegExp(`/intents/${intent.id}$`));

  // What the events carry: docs/EVENTS.md, served by the console; its own anchors work, links to docs it does not
  // serve are plain text.
  await page.goto('/events');
  await page.getByRole('link', { name: 'What the events carry →' }).click();
  await expect(page).toHaveURL(/\/docs\/events$/);
  await expect(page.getByRole('heading', { name: 'Events for other services', level: 1 })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Payload (specVersion 1)', level: 2 })).toBeVisible();
  await page.getByRole('link', { name: 'Streams and environments' }).click();
  await expect(page).toHaveURL(/\/docs\/events#streams-and-environments$/);
  await expect(page.getByRole('heading', { name: 'Streams and environments', level: 2 })).toBeInViewport();
  await expect(page.getByText('bench/2026-11-24-relay.md')).toBeVisible();
  await expect(page.getByRole('link', { name: 'bench/2026-11-24-relay.md' })).toHaveCount(0);

  // The API reference, from the navigation.
  const apiLink = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API reference' });
  await expect(apiLink).toHaveAttribute('href', '/api-docs');
  await apiLink.click();
  await expect(page).toHaveURL(/\/api-docs$/);
  await expect(page.getByTestId('swagger-ui').getByText('Bridge Console API').first()).toBeVisible({ timeout: 20_000 });
  await expect(apiLink).toHaveAttribute('aria-current', 'page');
});

/**
 * An intent with 26 events, through the engine: created, seven rounds of NORMALIZED → FAILED → RECEIVED, then
 * NORMALIZED, PROCESSED, a correction, and a change refused for its stale version (a conflict event).
 */
async function historyOf26Events(marker: string) {
  const actor = { name: 'e2e-events' };
  let intent = await seedIntent('RECEIVED', { marker, order: 'E-26' });
  const move = async (status: 'NORMALIZED' | 'FAILED' | 'RECEIVED' | 'PROCESSED') => {
    intent = (await updateIntentStatus({ id: intent.id, status }, actor)).intent;
  };
  for (let round = 0; round < 7; round++) {
    await move('NORMALIZED');
    await move('FAILED');
    await move('RECEIVED');
  }
  await move('NORMALIZED');
  await move('PROCESSED');
  await reevaluateIntent({ id: intent.id, diff: { shipping: { method: 'express' } }, source: 'e2e', reason: 'customer upgraded' }, actor);
  await expect(updateIntentStatus({ id: intent.id, status: 'COMPLETED', expectedVersion: 0 }, actor)).rejects.toMatchObject({ code: 'version_conflict' });
  return intent;
}
