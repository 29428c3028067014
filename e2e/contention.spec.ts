import { expect, test } from '@playwright/test';
import pg from 'pg';
import { apiTokenFor, useSessionOf } from './auth';

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
    await page.screenshot({ path: 'e2e/screenshots/contention.png', fullPage: true });

    // The window is in the URL: switching keeps it shareable.
    await page.getByRole('link', { name: '24 hours' }).click();
    await expect(page).toHaveURL(/window=24h/);
    await expect(page.getByTestId('total-conflicts')).toContainText('last 24 hours');
  } finally {
    await admin.end();
  }
});
