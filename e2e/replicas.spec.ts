import { join } from 'node:path';
import { expect, test, type Browser } from './support/test';
import { disconnectDb } from '../lib/db/client';
import { freePort } from '../lib/db/embedded';
import { createIntent } from '../lib/intents/commands';
import { root, startNext, type NextServer } from '../scripts/next-server';
import { startReplicaPair, type ReplicaPair } from '../test/replica-pair';
import { useSessionOf } from './auth';
import { expectLive, screenshot } from './intents-fixtures';

/**
 * The console with a read replica, in the browser: pages are rendered from the replica, except for a person who just
 * changed something, whose pages (the read-after cookie set by the server action) come from the primary until the
 * replica has replayed their change; and a page open elsewhere, told of a change by the live feed, refetches with
 * the event's WAL position, so it reads the change even from a replica that has not replayed it. A console server and a primary + hot standby of this file's own
 * (test/replica-pair.ts); the replica's replay is paused by SQL, so "behind" is a state, not a race.
 */
test.describe.configure({ mode: 'serial' });

let pair: ReplicaPair;
let server: NextServer;
let sharedUrl: string | undefined;

test.beforeAll(async () => {
  test.setTimeout(240_000);
  pair = await startReplicaPair();
  server = await startNext({
    port: await freePort(),
    databaseUrl: pair.primaryUrl,
    logFile: join(root, 'test-results', 'next-server-replicas.log'),
    // A lag limit no paused replica reaches during the test: rotation by lag is the integration suite's subject.
    env: { BRIDGE_ENV: process.env.BRIDGE_ENV ?? 'development', DATABASE_READ_URL: pair.replicaUrl, READ_REPLICA_POLL_MS: '100', READ_REPLICA_MAX_LAG_MS: '600000' },
  });
  // Seeding (users, the intent) goes to this file's primary; the shared database is given back afterwards.
  await disconnectDb();
  sharedUrl = process.env.DATABASE_URL;
  process.env.DATABASE_URL = pair.primaryUrl;
});

test.afterAll(async () => {
  await pair?.replica.query('SELECT pg_wal_replay_resume()').catch(() => undefined);
  await server?.stop();
  await disconnectDb();
  process.env.DATABASE_URL = sharedUrl;
  await pair?.stop();
});

/**
 * A new intent the replica has replayed, and two operators with a page each: the one who will change it (the author)
 * and another.
 */
async function twoOperatorsOn(browser: Browser, order: string) {
  const intent = await createIntent({ payload: { order }, source: 'e2e-replicas' }, { name: 'e2e' });
  await expect.poll(async () => (await pair.replica.query('SELECT 1 FROM intents WHERE id = $1', [intent.id])).rowCount).toBe(1);
  const author = await browser.newContext({ baseURL: server.url });
  const other = await browser.newContext({ baseURL: server.url });
  await useSessionOf(author, server.url, ['operator']);
  await useSessionOf(other, server.url, ['operator']);
  return { intent, author, other, mine: await author.newPage(), theirs: await other.newPage() };
}

test('the author of a change sees it at once while the replica is paused; another operator sees the replica, and its lag on the Workers page', async ({ browser }) => {
  // Two people's sessions, a paused replica and a dozen page loads, each step waiting for what it asserts: more than
  // the default minute when the suites run side by side on two cores (a fresh-clone run took 40 s on its retry).
  test.slow();
  const { intent, author, other, mine, theirs } = await twoOperatorsOn(browser, 'E2E-R1');
  await mine.goto(`/intents/${intent.id}`);
  await expect(mine.getByTestId('intent-status')).toHaveText('RECEIVED');

  await pair.replica.query('SELECT pg_wal_replay_pause()');
  await mine.getByRole('group', { name: 'Status actions' }).getByRole('button', { name: 'Move to NORMALIZED' }).click();
  await expect(mine.getByTestId('intent-status')).toHaveText('NORMALIZED');
  expect((await author.cookies()).map((c) => c.name)).toContain('bc_read_after');
  // A fresh render of the page: the replica has not replayed the change, so the author's page comes from the primary.
  await mine.reload();
  await expect(mine.getByTestId('intent-status')).toHaveText('NORMALIZED');

  await theirs.goto(`/intents/${intent.id}`);
  await expect(theirs.getByTestId('intent-status')).toHaveText('RECEIVED');
  await theirs.goto('/workers');
  const replicas = theirs.getByRole('region', { name: 'Read replicas' });
  await expect(replicas.getByRole('cell', { name: 'replica-1' })).toBeVisible();
  await expect(replicas.getByText('in rotation')).toBeVisible();
  await expect(replicas.getByRole('row').nth(1).getByRole('cell').nth(3)).not.toHaveText('0 B');
  await replicas.scrollIntoViewIfNeeded();
  await screenshot(theirs, 'workers-replicas');

  await pair.replica.query('SELECT pg_wal_replay_resume()');
  await expect(async () => {
    await theirs.goto(`/intents/${intent.id}`);
    await expect(theirs.getByTestId('intent-status')).toHaveText('NORMALIZED', { timeout: 1_000 });
  }).toPass();
  await author.close();
  await other.close();
});

test('a page open elsewhere follows a live event to the change while the replica is paused: its refetch waits for the event’s position, so the primary answers it', async ({ browser }) => {
  const { intent, author, other, mine, theirs } = await twoOperatorsOn(browser, 'E2E-R2');
  await mine.goto(`/intents/${intent.id}`);
  await theirs.goto(`/intents/${intent.id}`);
  await expect(theirs.getByTestId('intent-status')).toHaveText('RECEIVED');
  await expectLive(theirs);

  await pair.replica.query('SELECT pg_wal_replay_pause()');
  try {
    // The intent's own read (the page also refetches its timeline and runs, which carry the intent's id too).
    const refetch = theirs.waitForResponse(
      (r) => r.request().method() === 'GET' && new URL(r.url()).pathname === `/api/intents/${intent.id}` && r.request().headers()['bridge-read-after'] !== undefined,
    );
    await mine.getByRole('group', { name: 'Status actions' }).getByRole('button', { name: 'Move to NORMALIZED' }).click();
    await expect(mine.getByTestId('intent-status')).toHaveText('NORMALIZED');
    // The other operator did nothing: the live event's position alone sends their page's refetch past the paused replica.
    await expect(theirs.getByTestId('intent-status')).toHaveText('NORMALIZED');
    expect((await refetch).headers()['bridge-read-source']).toBe('primary');
  } finally {
    await pair.replica.query('SELECT pg_wal_replay_resume()');
  }
  await author.close();
  await other.close();
});
