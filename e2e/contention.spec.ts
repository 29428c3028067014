import { expect, test } from './support/test';
import pg from 'pg';
import { ROLES } from '../lib/auth/permissions';
import { apiTokenFor, useSessionOf } from './auth';

// Not a React hook (a Playwright helper that plants a session cookie): named so the hooks lint rule lets a loop call it.
const sessionOf = useSessionOf;
import { rowOf, seedIntent, uniqueMarker } from './intents-fixtures';

/**
 * The Contention page against a production build: a burst of conflicting corrections through the API (all
 * opened at the same version) shows up in the conflict total and the charts.
 */
test('after a burst of conflicting corrections the Contention charts show it', async ({ page, context, baseURL, request }) => {
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ id: string; version: number }>(
      `INSERT INTO intents (id, payload, source, status) VALUES (gen_random_uuid(), '{"order":"E2E-CONTENTION","amount":1}', 'e2e', 'PROCESSED') RETURNING id::text AS id, version`,
    );
    const intent = rows[0];
    const { authorization } = await apiTokenFor(['viewer', 'reviewer']);
    const conflictsNow = async () => {
      const res = await request.get('/api/console/contention?window=15m', { headers: { authorization } });
      expect(res.status()).toBe(200);
      return (await res.json()).totals.conflicts as number;
    };
    const before = await conflictsNow();

    // Eight reviewers correct the same version at once: one wins, the other seven are refused as conflicts.
    const burst = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        request.post(`/api/intents/${intent.id}/reeval`, {
          headers: { authorization },
          data: { diff: { amount: 100 + i }, source: 'e2e', reason: `burst ${i}`, expectedVersion: intent.version },
        }),
      ),
    );
    const statuses = burst.map((r) => r.status()).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);

    // Counts are flushed by the server within about a second.
    await expect.poll(conflictsNow, { timeout: 15_000 }).toBeGreaterThanOrEqual(before + 7);

    await useSessionOf(context, baseURL!, ['viewer']);
    await page.goto('/contention?window=15m');
    await expect(page.getByRole('heading', { name: 'Contention', level: 1 })).toBeVisible();
    const tile = page.getByTestId('total-conflicts');
    await expect(tile).toContainText('Version conflicts');
    expect(Number(await tile.locator('div').first().textContent())).toBeGreaterThanOrEqual(before + 7);
    await expect(page.getByTestId('timeline-empty')).toHaveCount(0);
    await expect(page.getByTestId('chart-timeline').locator('.recharts-bar-rectangle').first()).toBeVisible();
    await expect(page.getByTestId('chart-operation')).toContainText('Correction');
    // Postgres' own deadlock counter is shown beside the application's figure.
    await expect(page.getByTestId('deadlocks-postgres')).toContainText('pg_stat_database.deadlocks');
    await expect(page.getByTestId('deadlocks-app')).toBeVisible();
    // The window is in the URL: switching keeps it shareable.
    await page.getByRole('link', { name: '24 hours' }).click();
    await expect(page).toHaveURL(/window=24h/);
    await expect(page.getByTestId('total-conflicts')).toContainText('last 24 hours');
  } finally {
    await admin.end();
  }
});

/**
 * A lock timeout, as every role sees it: it enters the lock-wait percentiles as a wait of at least the timeout
 * ("≥ 5.00 s"), and the Lock timeouts figure, its bar and the table's count open the Intents page on exactly the
 * intents behind it, in a URL that can be shared.
 */
test('a lock timeout enters the percentiles, and its figures open the intents behind it, for every role', async ({ browser, baseURL, request }) => {
  test.setTimeout(300_000);
  const marker = uniqueMarker('timeout');
  const intent = await seedIntent('PROCESSED', { order: marker });
  const holder = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'e2e-row-holder' });
  await holder.connect();
  try {
    // Someone's session holds the row; a status change waits out the server's lock timeout (5 s) and is refused.
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    const { authorization } = await apiTokenFor(['operator']);
    const refused = await request.post(`/api/intents/${intent.id}/status`, { headers: { authorization }, data: { status: 'COMPLETED' } });
    expect(refused.status()).toBe(423);
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
  }
  const { authorization } = await apiTokenFor(['viewer']);
  const timedOutWaits = async () => {
    const res = await request.get('/api/console/contention?window=15m', { headers: { authorization } });
    const report = await res.json();
    return (report.lockWait.byOperation as { operation: string; timedOut: number }[]).find((o) => o.operation === 'update_status')?.timedOut ?? 0;
  };
  await expect.poll(timedOutWaits, { timeout: 15_000 }).toBeGreaterThanOrEqual(1);

  for (const role of ROLES) {
    const context = await browser.newContext({ baseURL });
    const page = await context.newPage();
    try {
      await sessionOf(context, baseURL!, [role]);
      await page.goto('/contention?window=15m');
      const row = page.getByTestId('lock-wait-update_status');
      // The machine is shared with other builds: the first report may take a while.
      await expect(row, role).toBeVisible({ timeout: 30_000 });
      // The slowest percentile is the wait that ran out: at least the timeout, never the acquired waits' few ms.
      await expect(row.getByRole('cell').last(), role).toHaveText(/^≥ \d/);
      if (role === 'viewer') await page.screenshot({ path: 'test-results/screenshots/contention.png', fullPage: true });

      await page.getByTestId('total-lockTimeouts').click();
      await expect(page, role).toHaveURL(/\/intents\?contention=lockTimeouts&contentionFrom=[^&]+&contentionTo=/);
      await expect(page.getByTestId('contention-filter'), role).toContainText('lock timeouts');
      await expect(rowOf(page, intent.id), role).toBeVisible();
      // Every role reads the same figures and follows the same links; the remaining ways in are checked once.
      if (role !== 'viewer') continue;
      await page.screenshot({ path: 'test-results/screenshots/intents-behind-contention.png', fullPage: true });

      // The URL is the view: opened afresh, it lists the same intent.
      const shared = page.url();
      await page.goto('/intents');
      await page.goto(shared);
      await expect(rowOf(page, intent.id), role).toBeVisible();

      // The table's count and the operation's bar narrow to the operation.
      await page.goto('/contention?window=15m');
      await page.getByTestId('lock-wait-update_status').getByRole('link', { name: /timed out: show the intents/ }).click();
      await expect(page, role).toHaveURL(/contentionOperation=update_status/);
      await expect(page.getByTestId('contention-filter'), role).toContainText('in a status change');
      await expect(rowOf(page, intent.id), role).toBeVisible();

      await page.goto('/contention?window=15m');
      await page.getByTestId('chart-operation').locator('.recharts-bar-rectangle path[fill="var(--chart-lock-timeouts)"]').first().click();
      await expect(page, role).toHaveURL(/contention=lockTimeouts&contentionOperation=/);

      // "Remove this filter" goes back to all intents.
      await page.getByTestId('contention-filter').getByRole('link', { name: 'Remove this filter' }).click();
      await expect(page).toHaveURL(/\/intents$/);
    } finally {
      await context.close();
    }
  }
});
