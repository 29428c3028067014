import { join } from 'node:path';
import { expect, test } from './support/test';
import pg from 'pg';
import { useSessionOf } from './auth';

/**
 * The Locks page's history against a production build, whose server runs the lock history's sampler: a blocking
 * held from a plain session with two sessions queued behind it is, once over, a past episode on the page — on the
 * time strip, in the list, and opened with its root, its waiters and the tree as it was.
 */
const shots = 'test-results/screenshots';

async function connect(applicationName: string) {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: applicationName });
  client.on('error', () => undefined);
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return Object.assign(client, { pid: rows[0].pid });
}

test('a past blocking episode is on the strip, opens to its root and waiters, and the tree can be scrubbed', async ({ page, context, baseURL }) => {
  const admin = await connect('e2e-admin');
  const holder = await connect('e2e psql (holder)');
  const waiters = [await connect('e2e api (waiter 1)'), await connect('e2e api (waiter 2)')];
  try {
    const { rows } = await admin.query<{ id: string }>(`INSERT INTO intents (id, payload, source) VALUES (gen_random_uuid(), '{"order":"E2E-HISTORY"}', 'e2e') RETURNING id::text AS id`);
    const intentId = rows[0].id;
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intentId]);
    const queued = waiters.map((w) => w.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intentId]).catch((err: unknown) => err));
    // The server's sampler records the blocking (an event in the database), sees both waiters, and then its end.
    const episode = async () =>
      (await admin.query<{ id: string; waiters: number; ended: boolean }>(
        `SELECT e.id::text, jsonb_array_length(e.waiters) AS waiters, e.ended_at IS NOT NULL AS ended FROM lock_episodes e WHERE e.root_pid = $1 ORDER BY e.id DESC LIMIT 1`,
        [holder.pid],
      )).rows[0];
    await expect.poll(async () => (await episode())?.waiters ?? 0, { timeout: 20_000 }).toBe(2);
    await holder.query('COMMIT');
    await Promise.all(queued);
    await expect.poll(async () => (await episode())?.ended ?? false, { timeout: 20_000 }).toBe(true);
    const { id } = (await episode())!;

    await useSessionOf(context, baseURL!, ['oncall']);
    // By the short id the console shows, as the history's own filter takes it.
    await page.goto(`/locks?intent=${intentId.slice(0, 8)}`);
    const history = page.getByTestId('lock-history');
    await expect(history.getByLabel('Intent id')).toHaveValue(intentId.slice(0, 8));
    const row = history.locator(`[data-testid="episode-row"][data-episode-id="${id}"]`);
    await expect(row).toContainText(`pid ${holder.pid}`);
    await expect(row.locator(`[data-intent-id="${intentId}"]`)).toBeVisible();

    // A bar on the strip opens the episode and scrubs to its peak: the tree as it was, root and both waiters.
    await history.locator(`[data-testid="strip-episode"][data-episode-id="${id}"]`).click();
    const scrubbed = page.getByTestId('scrubbed-trees');
    await expect(scrubbed.getByTestId(`history-node-${holder.pid}`)).toBeVisible();
    for (const w of waiters) await expect(scrubbed.getByTestId(`history-node-${w.pid}`)).toBeVisible();
    const detail = page.getByTestId('episode-detail');
    await expect(detail.getByTestId('episode-root')).toHaveAttribute('data-pid', String(holder.pid));
    await expect(detail.getByTestId('episode-waiter')).toHaveCount(2);
    await page.screenshot({ path: join(shots, 'locks-history.png'), fullPage: true });
    await detail.screenshot({ path: join(shots, 'locks-history-episode.png') });
    await history.getByTestId('history-strip').screenshot({ path: join(shots, 'locks-history-strip.png') });
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    for (const c of [admin, holder, ...waiters]) await c.end().catch(() => undefined);
  }
});
