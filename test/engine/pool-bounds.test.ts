import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { env, poolLockWaiters } from '@/lib/env';
import { updateStatusStatement } from '@/lib/intents/statements';
import { dbFingerprint, holdRowLocks, lockWaiters, resetEngine, session, waitForWaiters } from '../barriers';
import { intentRow, makeIntent } from '../helpers';
import { api, signInApiCaller, type ApiResponse } from '../api/route-client';

/**
 * One held row must not drain the pool (docs/LOCKING.md, "Waiting on a held row"). A session holds an intent's row
 * lock; many more commands on it than the pool has connections arrive through the API at once. Before the bounds,
 * each waited out its lock timeout on a pooled connection, in waves, and health and reads waited behind them for
 * a connection. Now one waits, the rest are refused at once, nothing they did is written, and health and a read
 * answer meanwhile well within a single lock timeout. Timing bounds are derived from the lock timeout, never a
 * wall-clock constant; the order of events is forced with the held lock and the waiter barrier.
 */
const lockTimeoutMs = () => env().LOCK_TIMEOUT_MS;
const timed = async <T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> => {
  const t0 = performance.now();
  const value = await run();
  return { value, ms: performance.now() - t0 };
};
const code = (res: ApiResponse) => res.body?.error?.code as string | undefined;

beforeAll(async () => {
  await signInApiCaller();
});
beforeEach(resetEngine);

describe('a held row and many commands on it', () => {
  it('status changes: one waits, the rest (3 × the pool) are refused at once naming the holder; health and a read answer meanwhile; nothing written; all succeed after release', async () => {
    const n = 3 * env().DB_POOL_SIZE;
    const intent = await makeIntent('RECEIVED');
    const holder = await holdRowLocks([intent.id], 'psql');
    const before = await dbFingerprint();
    const first = api.status(intent.id, { status: 'NORMALIZED' });
    await waitForWaiters(1, { application: `bridge:update_status:${intent.id}` });
    const rest = await Promise.all(Array.from({ length: n - 1 }, () => timed(() => api.status(intent.id, { status: 'NORMALIZED' }))));
    for (const { value, ms } of rest) {
      expect(value.status).toBe(423);
      expect(value.body.error).toMatchObject({ code: 'lock_timeout', details: { refusedWithoutWaiting: true, holders: [expect.objectContaining({ pid: holder.session.pid, applicationName: 'psql' })] } });
      // Answered without waiting: none of them could have waited out a lock timeout.
      expect(ms).toBeLessThan(lockTimeoutMs());
    }
    // The row is still held, one command still waits on it, and the pool still serves health and reads.
    const health = await timed(() => api.health());
    const list = await timed(() => api.list({ limit: '20' }));
    expect(health.value).toMatchObject({ status: 200, body: { ok: true } });
    expect(list.value.status).toBe(200);
    expect(health.ms).toBeLessThan(lockTimeoutMs());
    expect(list.ms).toBeLessThan(lockTimeoutMs());
    expect(await lockWaiters({ application: `bridge:update_status:${intent.id}` })).toBe(1);
    expect(await dbFingerprint()).toEqual(before);
    await holder.release();
    expect(await first).toMatchObject({ status: 200, body: { alreadyApplied: false, intent: { status: 'NORMALIZED', version: 1 } } });
    const after = await Promise.all(Array.from({ length: 5 }, () => api.status(intent.id, { status: 'NORMALIZED' })));
    expect(after.every((r) => r.status === 200 && r.body.alreadyApplied)).toBe(true);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
  });

  it('corrections: the locked attempt of one waits, the others are refused at once; nothing written; after release they apply', async () => {
    const intent = await makeIntent('PROCESSED');
    const holder = await holdRowLocks([intent.id], 'psql');
    const before = await dbFingerprint();
    const correction = (k: number) => ({ diff: { k }, source: 'pool-test', reason: `correction ${k}` });
    const first = api.reeval(intent.id, correction(0));
    await waitForWaiters(1, { application: `bridge:reevaluate:${intent.id}` });
    const rest = await Promise.all(Array.from({ length: 2 * env().DB_POOL_SIZE }, (_, k) => timed(() => api.reeval(intent.id, correction(k + 1)))));
    for (const { value, ms } of rest) {
      expect(value.status).toBe(423);
      expect(value.body.error.details).toMatchObject({ refusedWithoutWaiting: true, holders: [expect.objectContaining({ pid: holder.session.pid })] });
      expect(ms).toBeLessThan(lockTimeoutMs());
    }
    expect(await lockWaiters({ application: `bridge:reevaluate:${intent.id}` })).toBe(1);
    expect(await dbFingerprint()).toEqual(before);
    await holder.release();
    expect(await first).toMatchObject({ status: 200, body: { alreadyApplied: false, version: 3 } });
    expect(await api.reeval(intent.id, correction(1))).toMatchObject({ status: 200, body: { alreadyApplied: false, version: 4 } });
  });

  it('bulk updates: the one at the database waits, the others of this console are refused at once with 503 db_under_pressure and Retry-After', async () => {
    const held = await makeIntent('RECEIVED');
    const other = await makeIntent('RECEIVED');
    const holder = await holdRowLocks([held.id], 'psql');
    const before = await dbFingerprint();
    const first = api.bulk({ ids: [held.id, other.id], status: 'NORMALIZED' });
    await waitForWaiters(1, { application: 'bridge:bulk_update_status:' });
    const rest = await Promise.all(Array.from({ length: 5 }, () => timed(() => api.bulk({ ids: [other.id, held.id], status: 'NORMALIZED' }))));
    for (const { value, ms } of rest) {
      expect(value.status).toBe(503);
      expect(code(value)).toBe('db_under_pressure');
      expect(value.body.error.details).toMatchObject({ reason: 'lock_waiters' });
      expect(value.headers.get('retry-after')).toBe('1');
      expect(ms).toBeLessThan(lockTimeoutMs());
    }
    expect(await dbFingerprint()).toEqual(before);
    await holder.release();
    expect(await first).toMatchObject({ status: 200 });
    expect(await intentRow(other.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
  });
});

describe('the pool share: held rows of many intents', () => {
  it('at most poolLockWaiters() connections wait; one more held intent is refused at once with 503 db_under_pressure; health answers; all apply after release', async () => {
    const share = poolLockWaiters();
    expect(share).toBeLessThan(env().DB_POOL_SIZE);
    const intents = await Promise.all(Array.from({ length: share + 1 }, () => makeIntent('RECEIVED')));
    const holder = await holdRowLocks(intents.map((i) => i.id), 'psql');
    const waiting = intents.slice(0, share).map((i) => api.status(i.id, { status: 'NORMALIZED' }));
    await waitForWaiters(share, { application: 'bridge:update_status:' });
    const last = intents[share];
    const refused = await timed(() => api.status(last.id, { status: 'NORMALIZED' }));
    expect(refused.value.status).toBe(503);
    expect(refused.value.body.error).toMatchObject({ code: 'db_under_pressure', details: { reason: 'lock_waiters' } });
    expect(refused.value.headers.get('retry-after')).toBe('1');
    expect(refused.ms).toBeLessThan(lockTimeoutMs());
    const health = await timed(() => api.health());
    expect(health.value.status).toBe(200);
    expect(health.ms).toBeLessThan(lockTimeoutMs());
    expect(await intentRow(last.id)).toMatchObject({ status: 'RECEIVED', version: 0 });
    await holder.release();
    expect((await Promise.all(waiting)).every((r) => r.status === 200)).toBe(true);
    expect(await api.status(last.id, { status: 'NORMALIZED' })).toMatchObject({ status: 200, body: { intent: { version: 1 } } });
  });
});

describe('waiter places of one intent, over every console instance', () => {
  it('other instances fill the intent’s places; the next one, from any instance, is refused at once (SQLSTATE BR002, 423 naming the holder)', async () => {
    const intent = await makeIntent('RECEIVED');
    const holder = await holdRowLocks([intent.id], 'psql');
    const places = 4; // bridge_row_waiters() when the database does not set bridge.row_waiters
    // Other instances: their own connections, running the engine's own statement in mode 'wait'.
    const statement = updateStatusStatement({
      id: intent.id,
      to: 'NORMALIZED',
      allowedFrom: ['RECEIVED'],
      expectedVersion: null,
      lock: 'wait',
      lockTimeoutMs: 60_000,
      contendedWithinMs: 0,
      actor: 'other-instance',
      reason: null,
      key: null,
    });
    const others = await Promise.all(Array.from({ length: places + 1 }, () => session('bridge-test:other-instance')));
    const run = (c: pg.Client) => c.query(statement.text, statement.values as unknown[]);
    const waiting = others.slice(0, places).map((c) => run(c).catch((e: unknown) => e));
    await waitForWaiters(places, { application: `bridge:update_status:${intent.id}` });
    const full = await run(others[places]).catch((e: { code?: string }) => e);
    expect((full as { code?: string }).code).toBe('BR002');
    const ours = await timed(() => api.status(intent.id, { status: 'NORMALIZED' }));
    expect(ours.value.status).toBe(423);
    expect(ours.value.body.error.details).toMatchObject({ refusedWithoutWaiting: true, holders: [expect.objectContaining({ pid: holder.session.pid })] });
    expect(ours.ms).toBeLessThan(lockTimeoutMs());
    await holder.release();
    const outcomes = await Promise.all(waiting);
    expect(outcomes.every((r) => (r as pg.QueryResult).rows?.length === 1)).toBe(true);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
  });
});
