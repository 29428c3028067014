import { expect, test } from './support/test';
import pg from 'pg';
import { useSessionOf } from './auth';

/**
 * The Locks page against a production build: a row lock held by a test transaction shows up as a root blocker
 * with its waiter under it, tied to the intent through the row; an on-call user cancels it from the page, with a
 * reason, and the waiter gets through; the action is in the audit log.
 */
const databaseUrl = () => {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set (the e2e global setup provides it)');
  return url;
};

async function connect(applicationName: string) {
  const client = new pg.Client({ connectionString: databaseUrl(), application_name: applicationName });
  client.on('error', () => undefined);
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return Object.assign(client, { pid: rows[0].pid });
}

async function waitForWaiter(admin: pg.Client, pid: number) {
  await expect
    .poll(async () => (await admin.query(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [pid])).rows[0]?.wait_event_type, { timeout: 10_000 })
    .toBe('Lock');
}

test('a held row lock shows its waiter in the blocking tree, and cancelling the holder from the page frees it', async ({ page, context, baseURL }) => {
  const admin = await connect('e2e-admin');
  const holder = await connect('e2e psql (holder)');
  const waiter = await connect('e2e psql (waiter)');
  try {
    const { rows } = await admin.query<{ id: string }>(
      `INSERT INTO intents (id, payload, source) VALUES (gen_random_uuid(), '{"order":"E2E-LOCK"}', 'e2e') RETURNING id::text AS id`,
    );
    const intentId = rows[0].id;
    // The holder locks the row and keeps working inside its transaction (a query a cancel can stop).
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intentId]);
    const holderWork = holder.query('SELECT pg_sleep(120)').catch((err: { code?: string }) => err);
    const waiting = waiter.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intentId]);
    await waitForWaiter(admin, waiter.pid);

    await useSessionOf(context, baseURL!, ['oncall']);
    await page.goto('/locks');
    const root = page.getByTestId(`tree-node-${holder.pid}`);
    await expect(root).toBeVisible();
    await expect(root.getByText('root blocker')).toBeVisible();
    // The waiter sits under the holder, and both are tied to the intent through its row (no engine label here).
    await expect(root.getByTestId(`tree-node-${waiter.pid}`)).toBeVisible();
    await expect(root.locator(`[data-intent-id="${intentId}"]`).first()).toBeVisible();
    await expect(page.getByTestId(`session-${waiter.pid}`)).toContainText(`${holder.pid}`);
    await expect(page.locator(`[data-testid="lock-row"][data-pid="${waiter.pid}"][data-granted="false"]`)).toContainText('ShareLock');

    // Impact first, then a reason, then cancel.
    await root.getByRole('button', { name: 'Unblock…' }).first().click();
    const panel = page.getByTestId(`unblock-panel-${holder.pid}`);
    await expect(panel.getByTestId('impact-waiting')).toHaveText('1');
    await page.screenshot({ path: 'test-results/screenshots/locks.png', fullPage: true });
    await expect(panel.getByRole('button', { name: 'Terminate session' })).toBeDisabled();
    await panel.getByRole('button', { name: 'Cancel its query' }).click();
    // No reason: refused by the browser's own required check, nothing sent.
    await expect(panel.getByTestId('unblock-result')).toHaveCount(0);
    await panel.getByLabel(/Reason/).fill('e2e: the holder is stuck; freeing its waiter');
    await panel.getByRole('button', { name: 'Cancel its query' }).click();
    await expect(panel.getByTestId('unblock-result')).toContainText('nobody waits behind it');

    expect(await holderWork).toMatchObject({ code: '57014' });
    expect((await waiting).rows).toEqual([{ id: intentId }]);
    await expect(page.getByTestId(`tree-node-${holder.pid}`)).toHaveCount(0);

    const audit = await admin.query(`SELECT action, details FROM audit_events WHERE intent_id = $1 AND action = 'backend_cancel'`, [intentId]);
    expect(audit.rows).toHaveLength(1);
    expect(audit.rows[0].details).toMatchObject({ pid: holder.pid, reason: 'e2e: the holder is stuck; freeing its waiter', waitingBehind: 1, signalled: true });
  } finally {
    for (const c of [holder, waiter, admin]) await c.end().catch(() => undefined);
  }
});

test('a viewer sees locks but no unblock controls', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/locks');
  await expect(page.getByRole('heading', { name: 'Locks', level: 1 })).toBeVisible();
  await expect(page.getByTestId('blocking-tree')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Unblock…' })).toHaveCount(0);
});

test('a lock refusal links to the Locks page with the backend that held the row selected', async ({ page, context, baseURL }) => {
  const admin = await connect('e2e-admin');
  const holder = await connect('e2e psql (forgotten transaction)');
  try {
    const { rows } = await admin.query<{ id: string }>(
      `INSERT INTO intents (id, payload, source) VALUES (gen_random_uuid(), '{"order":"E2E-423"}', 'e2e') RETURNING id::text AS id`,
    );
    const intentId = rows[0].id;
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intentId]);

    await useSessionOf(context, baseURL!, ['operator', 'oncall']);
    await page.goto(`/intents/${intentId}`);
    await page.getByRole('group', { name: 'Status actions' }).getByRole('button', { name: 'Move to NORMALIZED' }).click();
    // The server's lock timeout runs out: the refusal names the holder and links to it.
    const alert = page.getByRole('alert').filter({ hasText: 'The intent is locked by another operation' });
    await expect(alert).toContainText(`${holder.pid}`, { timeout: 15_000 });
    const link = alert.getByTestId('lock-holder-link');
    await expect(link).toHaveText(`See backend ${holder.pid} on the Locks page →`);
    await link.click();

    await expect(page).toHaveURL(new RegExp(`/locks\\?pid=${holder.pid}$`));
    await expect(page.getByTestId('named-backend')).toContainText(`Backend ${holder.pid} (e2e psql (forgotten transaction), idle in transaction`);
    await expect(page.getByTestId(`session-${holder.pid}`)).toHaveAttribute('data-named', 'true');
    // On-call: its unblock panel is open, ready for a reason.
    await expect(page.getByTestId(`unblock-panel-${holder.pid}`)).toBeVisible();
  } finally {
    for (const c of [holder, admin]) await c.end().catch(() => undefined);
  }
});
