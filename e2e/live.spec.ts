import { expect, test } from './support/test';
import { updateIntentStatus } from '../lib/intents/commands';
import { apiTokenFor, useSessionOf } from './auth';
import { expectLive, rowOf, screenshot, seedIntent, uniqueMarker, watchFor } from './intents-fixtures';

/**
 * Live: a change committed anywhere (here: through the JSON API, as another service would) reaches an open page
 * without a reload and without polling (Postgres NOTIFY → /api/events → TanStack Query invalidation). How long it
 * takes is reported, not asserted: on a shared machine a bound on time only measures the machine.
 */
test('a change made through the API appears on an open Intents page without a reload', async ({ page, context, baseURL, request }) => {
  const marker = uniqueMarker('e2e-live');
  const intent = await seedIntent('RECEIVED', { marker, kind: 'shipment' });
  const { authorization } = await apiTokenFor(['operator']);
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto(`/intents?q=${marker}`);
  await expect(rowOf(page, intent.id)).toContainText('RECEIVED');
  await expectLive(page);
  // A full reload would lose this.
  await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));

  // Measured in the page (MutationObserver), from the API's answer (the commit) to the text on screen.
  const statusSeen = await watchFor(page, `tr[data-intent-id="${intent.id}"]`, 'NORMALIZED');
  const moved = await request.post(`/api/intents/${intent.id}/status`, { headers: { authorization }, data: { status: 'NORMALIZED' } });
  const movedAt = Date.now();
  expect(moved.status()).toBe(200);
  await expect(rowOf(page, intent.id)).toContainText('NORMALIZED');
  const statusLatency = (await statusSeen()) - movedAt;

  const newSeen = await watchFor(page, 'table[aria-label="Intents"] tbody', 'created-by-api');
  const created = await request.post('/api/intents', { headers: { authorization }, data: { payload: { marker, kind: 'created-by-api' }, source: 'e2e-api' } });
  const createdAt = Date.now();
  expect(created.status()).toBe(201);
  const { id } = (await created.json()) as { id: string };
  await expect(rowOf(page, id)).toBeVisible();
  const createLatency = (await newSeen()) - createdAt;
  await expect(page.getByTestId('count-All')).toHaveText('2');

  expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
  test.info().annotations.push({ type: 'live latency', description: `status change ${statusLatency} ms, new intent ${createLatency} ms (API response → row on screen)` });
  console.log(`[live] API response → on screen: status change ${statusLatency} ms, new intent ${createLatency} ms`);
  await screenshot(page, 'intents-live');
});

test('an open intent page follows changes made elsewhere', async ({ page, context, baseURL, request }) => {
  const intent = await seedIntent('PROCESSED', { marker: uniqueMarker('e2e-live-detail'), amount: 1 });
  const { authorization } = await apiTokenFor(['reviewer']);
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto(`/intents/${intent.id}`);
  await expectLive(page);
  const correctedSeen = await watchFor(page, '[data-testid="intent-status"]', 'CORRECTED');
  const res = await request.post(`/api/intents/${intent.id}/reeval`, {
    headers: { authorization },
    data: { diff: { amount: 2 }, source: 'partner-file', reason: 'late fee added' },
  });
  const answeredAt = Date.now();
  expect(res.status()).toBe(200);
  await expect(page.getByTestId('intent-status')).toHaveText('CORRECTED');
  test.info().annotations.push({ type: 'live latency', description: `correction ${(await correctedSeen()) - answeredAt} ms (API response → status on screen)` });
  await expect(page.getByTestId('correction')).toContainText('late fee added');
  await expect(page.locator('[data-testid="timeline-entry"][data-kind="correction"]').first()).toContainText('late fee added');
});

test('while the stream is down the page says it is reconnecting, and on reconnecting it catches up on what it missed', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('e2e-resume');
  const intent = await seedIntent('RECEIVED', { marker });
  await useSessionOf(context, baseURL!, ['viewer']);
  // The stream cannot connect: every attempt fails, as when the network or the server is away.
  let attempts = 0;
  await page.route('**/api/events**', (route) => {
    attempts++;
    return route.abort('connectionreset');
  });
  await page.goto(`/intents?q=${marker}`);
  await expect(page.getByTestId('live-indicator')).toHaveAttribute('data-state', 'reconnecting');
  await expect(page.getByTestId('live-indicator')).toHaveText(/Reconnecting/);
  await screenshot(page, 'intents-reconnecting');

  // Committed while the page had no stream at all.
  await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, { name: 'e2e-elsewhere' });
  // The page tries again after the commit and fails again: until the stream is back, nothing can tell it.
  const attemptsAtCommit = attempts;
  await expect.poll(() => attempts, { timeout: 30_000 }).toBeGreaterThan(attemptsAtCommit);
  await expect(rowOf(page, intent.id)).toContainText('RECEIVED');

  // The stream comes back and resumes from the position the page was rendered at: the change arrives, no reload.
  const resumed = page.waitForRequest((r) => r.url().includes('/api/events?since='));
  await page.unroute('**/api/events**');
  await resumed;
  await expectLive(page);
  await expect(rowOf(page, intent.id)).toContainText('NORMALIZED');
});
