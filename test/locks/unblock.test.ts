import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ForbiddenError } from '@/lib/auth/errors';
import { db } from '@/lib/db/client';
import { ValidationError } from '@/lib/shared/errors';
import { CancelFirstError, NotBlockingError } from '@/lib/locks/errors';
import { cancelBackend, terminateBackend, unblockImpact } from '@/lib/locks/unblock';
import { actorOf, makeUser, resetAuth } from '../auth-helpers';
import { makeIntent, rawClient, resetDatabase } from '../helpers';
import { waitForWaiters } from '../barriers';

/**
 * Guarded unblocking against real backends: the impact is computed first, a cancel frees the waiters of a holder
 * that is running a query, a holder idle in its transaction ignores a cancel and can then (and only then) be
 * terminated, and every action lands in the append-only audit log with its reason and impact.
 */
const clients: pg.Client[] = [];
const pending: Promise<unknown>[] = [];

async function client(name: string): Promise<pg.Client & { pid: number }> {
  const c = await rawClient(name);
  c.on('error', () => undefined); // a terminated connection reports an error event
  clients.push(c);
  const [{ pid }] = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
  return Object.assign(c, { pid });
}

function start<T>(promise: Promise<T>): Promise<T> {
  pending.push(promise.catch((err) => err));
  return promise;
}

type AuditRow = { intentId: string | null; action: string; actor: string; details: Record<string, unknown> };
async function auditRows(action: string): Promise<AuditRow[]> {
  return db().$queryRaw<AuditRow[]>`
    SELECT intent_id::text AS "intentId", action, actor, details FROM audit_events WHERE action = ${action} ORDER BY id`;
}

/** A holder with the intent's row locked, and an unlabelled session queued behind it. */
async function blockedRow(holderBusy: boolean) {
  const intent = await makeIntent();
  const holder = await client('bridge-test:holder');
  const waiter = await client('psql');
  await holder.query('BEGIN');
  await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
  // Busy: inside its transaction, running a long query (which a cancel stops). Otherwise idle in transaction.
  const holderQuery = holderBusy ? start(holder.query('SELECT pg_sleep(60)')) : undefined;
  const waiting = start(waiter.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]));
  await waitForWaiters(1);
  return { intent, holder, waiter, holderQuery, waiting };
}

let oncall: ReturnType<typeof actorOf>;
let viewer: ReturnType<typeof actorOf>;

beforeEach(async () => {
  await resetDatabase();
  await resetAuth();
  oncall = actorOf((await makeUser(['oncall'])).user, 'session');
  viewer = actorOf((await makeUser(['viewer', 'operator'])).user, 'session');
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => undefined);
  await Promise.all(pending.splice(0));
});

describe('unblock impact', () => {
  it('says how many wait behind the root blocker, how old its transaction is, and which intents', async () => {
    const { intent, holder, waiter } = await blockedRow(false);
    const impact = await unblockImpact(holder.pid);
    expect(impact).toMatchObject({ pid: holder.pid, waitingBehind: 1, directWaiters: [waiter.pid], isWaiting: false, state: 'idle in transaction' });
    expect(impact.intents).toEqual([{ id: intent.id, via: 'row-holds' }]);
    expect(impact.waiterIntents).toEqual([intent.id]);
    expect(impact.transactionAgeMs).toBeGreaterThanOrEqual(0);
    const waiterImpact = await unblockImpact(waiter.pid);
    expect(waiterImpact).toMatchObject({ waitingBehind: 0, isWaiting: true, rootBlockers: [holder.pid] });
    await holder.query('ROLLBACK');
  });

  it('is a 404 for a pid that is not a backend of this database', async () => {
    await expect(unblockImpact(999_999)).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('cancel and terminate', () => {
  it('cancelling a holder that is running a query frees its waiter, and is audited with reason and impact', async () => {
    const { intent, holder, holderQuery, waiting } = await blockedRow(true);
    const result = await cancelBackend(oncall, { pid: holder.pid, reason: 'INC-42: stuck batch holds the row' });
    expect(result.signalled).toBe(true);
    expect(result.impact.waitingBehind).toBe(1);
    await expect(holderQuery).rejects.toMatchObject({ code: '57014' });
    // The waiter gets the row: its statement completes.
    expect((await waiting).rows).toEqual([{ id: intent.id }]);
    expect(result.after).toEqual({ alive: true, waitingBehind: 0 });

    const audit = await auditRows('backend_cancel');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ intentId: intent.id, actor: oncall.name });
    expect(audit[0].details).toMatchObject({ pid: holder.pid, reason: 'INC-42: stuck batch holds the row', waitingBehind: 1, signalled: true, intents: [intent.id] });
    expect(typeof audit[0].details.transactionAgeMs).toBe('number');
  });

  it('refuses terminate before a cancel while the holder runs a query (a cancel can help it), and audits the refusal', async () => {
    const { intent, holder, holderQuery } = await blockedRow(true);
    expect(await unblockImpact(holder.pid)).toMatchObject({ state: 'active', cancelCanHelp: true });
    await expect(terminateBackend(oncall, { pid: holder.pid, reason: 'holder ignores everything' })).rejects.toBeInstanceOf(CancelFirstError);
    expect(await auditRows('backend_terminate')).toHaveLength(0);
    // Refused like accepted: who tried, on which backend and intent, why, and what the guard answered.
    const refused = await auditRows('backend_terminate_refused');
    expect(refused).toEqual([expect.objectContaining({ intentId: intent.id, actor: oncall.name })]);
    expect(refused[0].details).toMatchObject({ pid: holder.pid, reason: 'holder ignores everything', state: 'active', intents: [intent.id], refused: { code: 'cancel_first' } });
    await cancelBackend(oncall, { pid: holder.pid, reason: 'the gentle way first' });
    await expect(holderQuery).rejects.toMatchObject({ code: '57014' });
  });

  it('terminates a blocker idle in its transaction at once (there is no query to cancel), frees the waiter, and audits', async () => {
    const { intent, holder, waiting } = await blockedRow(false);
    const impact = await unblockImpact(holder.pid);
    expect(impact).toMatchObject({ state: 'idle in transaction', cancelCanHelp: false });
    expect(impact.stateAgeMs).toBeGreaterThanOrEqual(0);

    const result = await terminateBackend(oncall, { pid: holder.pid, reason: 'idle holder; INC-43' });
    expect(result.signalled).toBe(true);
    expect(result.after?.alive).toBe(false);
    expect((await waiting).rows).toEqual([{ id: intent.id }]);
    const audit = await auditRows('backend_terminate');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ intentId: intent.id, actor: oncall.name });
    expect(audit[0].details).toMatchObject({ pid: holder.pid, reason: 'idle holder; INC-43', signalled: true, waitingBehind: 1, withoutCancel: true, state: 'idle in transaction' });
  });

  it('an idle transaction holding intent rows with nobody waiting this instant: the rows are named, and terminate is allowed', async () => {
    const [a, b, untouched] = [await makeIntent(), await makeIntent(), await makeIntent()];
    const holder = await client('psql (forgot to commit)');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [a.id]);
    await holder.query(`UPDATE intents SET source = source WHERE id = $1`, [b.id]);
    const impact = await unblockImpact(holder.pid);
    expect(impact).toMatchObject({ state: 'idle in transaction', waitingBehind: 0, recentBlocking: null });
    expect(impact.heldIntentRows).toEqual([a.id, b.id].sort());
    expect(impact.intents).toEqual(expect.arrayContaining([{ id: a.id, via: 'row-holds' }, { id: b.id, via: 'row-holds' }]));
    expect(impact.intents.map((i) => i.id)).not.toContain(untouched.id);

    const result = await terminateBackend(oncall, { pid: holder.pid, reason: 'psql left open; INC-44' });
    expect(result).toMatchObject({ signalled: true, after: { alive: false } });
    // One audit row per intent it held: each intent's own history says who ended the session, and why.
    expect((await auditRows('backend_terminate')).map((r) => r.intentId).sort()).toEqual([a.id, b.id].sort());
  });

  it('refuses terminate when the backend, though cancelled before, no longer blocks anyone', async () => {
    const { holder, waiter, waiting } = await blockedRow(false);
    await cancelBackend(oncall, { pid: holder.pid, reason: 'try the gentle way first' });
    await holder.query('ROLLBACK');
    await waiting;
    await waiter.query('SELECT 1');
    await holder.query('BEGIN'); // in a transaction again, blocking no one
    await expect(terminateBackend(oncall, { pid: holder.pid, reason: 'too late' })).rejects.toBeInstanceOf(NotBlockingError);
    expect((await auditRows('backend_terminate_refused')).map((r) => r.details)).toEqual([expect.objectContaining({ pid: holder.pid, reason: 'too late', refused: expect.objectContaining({ code: 'not_blocking' }) })]);
    await holder.query('ROLLBACK');
  });

  it('wants the on-call role and a reason; nothing is signalled or audited otherwise', async () => {
    const { holder } = await blockedRow(false);
    await expect(cancelBackend(viewer, { pid: holder.pid, reason: 'I am not on call' })).rejects.toBeInstanceOf(ForbiddenError);
    await expect(terminateBackend(viewer, { pid: holder.pid, reason: 'I am not on call' })).rejects.toBeInstanceOf(ForbiddenError);
    const noReason = await cancelBackend(oncall, { pid: holder.pid, reason: '   ' }).catch((e) => e);
    expect(noReason).toBeInstanceOf(ValidationError);
    expect(noReason.issues[0].field).toBe('reason');
    expect(await auditRows('backend_cancel')).toHaveLength(0);
    // Not a guard's refusal but a door's (no permission, no reason): nothing of the backend was looked at.
    expect(await auditRows('backend_cancel_refused')).toHaveLength(0);
    expect(await auditRows('backend_terminate_refused')).toHaveLength(0);
    const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ${holder.pid}::int AND state = 'idle in transaction'`;
    expect(Number(n)).toBe(1);
    await holder.query('ROLLBACK');
  });

  it('does not signal system processes', async () => {
    const [{ pid }] = await db().$queryRaw<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend' AND datname IS NULL LIMIT 1`;
    // Such processes belong to no database, so the console does not even see them as its backends.
    await expect(cancelBackend(oncall, { pid, reason: 'should never be allowed' })).rejects.toMatchObject({ code: 'not_found' });
  });
});
