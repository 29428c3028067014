import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bulkUpdateStatus, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { contentionReport } from '@/lib/contention/queries';
import { db } from '@/lib/db/client';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { makeIntent, rawClient, resetDatabase, tester } from '../helpers';
import { waitForWaiters } from '../barriers';
import { eventually } from '../wait';
import { apiRoute } from '@/lib/http/api-router';

const { GET } = apiRoute('/api/console/contention');

/**
 * The Contention report from what the engine really recorded: stale corrections (conflicts), re-applied ones
 * (already applied), a lock timeout behind a held row, and a real deadlock between the engine and a plain
 * session — with Postgres' own deadlock counter read beside the application's figures.
 */
const clients: pg.Client[] = [];
const pending: Promise<unknown>[] = [];
function start<T>(promise: Promise<T>): Promise<T> {
  pending.push(promise.catch((err) => err));
  return promise;
}
async function client(name: string) {
  const c = await rawClient(name);
  clients.push(c);
  return c;
}

async function acquiredWaits(operation: string): Promise<number> {
  const [row] = await db().$queryRaw<{ n: number }[]>`SELECT coalesce(sum(count), 0)::int AS n FROM lock_wait_buckets WHERE operation = ${operation} AND NOT is_replay`;
  return row.n;
}

beforeEach(async () => {
  await flushOutcomes();
  await resetDatabase();
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => undefined);
  await Promise.all(pending.splice(0));
});

describe('contention report', () => {
  it('is empty but complete on a quiet database', async () => {
    const report = await contentionReport({ window: '15m' });
    expect(report.timeline).toHaveLength(15);
    expect(report.totals).toEqual({ conflicts: 0, deadlocks: 0, lockTimeouts: 0, retries: 0, alreadyApplied: 0 });
    expect(report.byOperation).toEqual([]);
    expect(report.lockWait.byOperation).toEqual([]);
    expect(report.deadlocks.recent).toEqual([]);
    expect(report.deadlocks.postgres.total).toBeGreaterThanOrEqual(0);
  });

  it('counts stale and re-applied corrections, lock timeouts and lock waits per operation', async () => {
    const intent = await makeIntent('PROCESSED');
    const first = await reevaluateIntent({ id: intent.id, diff: { amount: 11 }, source: 'test', reason: 'fix amount', expectedVersion: intent.version }, tester);
    // The same correction again: already applied. A correction from the version before: refused as stale.
    await reevaluateIntent({ id: intent.id, diff: { amount: 11 }, source: 'test', reason: 'fix amount' }, tester);
    for (let i = 0; i < 3; i++) {
      await reevaluateIntent({ id: intent.id, diff: { amount: 20 + i }, source: 'test', reason: 'stale', expectedVersion: intent.version }, tester).catch((e) => e);
    }
    expect(first.version).toBe(intent.version + 1);

    const holder = await client('bridge-test:holder');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    const timedOut = await updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester, { lockTimeoutMs: 50 }).catch((e) => e);
    expect(timedOut.code).toBe('lock_timeout');
    await holder.query('ROLLBACK');
    await flushOutcomes();

    const report = await contentionReport({ window: '15m' });
    expect(report.totals).toMatchObject({ conflicts: 3, alreadyApplied: 1, lockTimeouts: 1 });
    const reevaluate = report.byOperation.find((o) => o.name === 'Correction')!;
    expect(reevaluate).toMatchObject({ conflicts: 3, alreadyApplied: 1 });
    expect(report.byOperation.find((o) => o.name === 'Status change')).toMatchObject({ lockTimeouts: 1 });
    // The timeline holds the same counts, per minute: summed, since the test may cross a minute's end.
    const summed = (key: 'conflicts' | 'alreadyApplied' | 'lockTimeouts') => report.timeline.reduce((n, p) => n + p[key], 0);
    expect({ conflicts: summed('conflicts'), alreadyApplied: summed('alreadyApplied'), lockTimeouts: summed('lockTimeouts') }).toEqual({ conflicts: 3, alreadyApplied: 1, lockTimeouts: 1 });
    // Every locking command recorded its wait; the walk to PROCESSED was update_status.
    expect(report.lockWait.byOperation.map((o) => o.operation)).toContain('update_status');
    const waited = report.lockWait.timeline.filter((p) => p.samples > 0);
    expect(waited.length).toBeGreaterThan(0);
    expect(waited.every((p) => p.p50 !== null)).toBe(true);
    // The lock timeout is a wait too, of at least its 50 ms: the status changes' slowest percentile is that wait.
    const statusWaits = report.lockWait.byOperation.find((o) => o.operation === 'update_status')!;
    expect(statusWaits.timedOut).toBe(1);
    expect(statusWaits.p99).toBeGreaterThanOrEqual(50);
    expect(statusWaits.samples).toBe(statusWaits.timedOut + (await acquiredWaits('update_status')));
  });

  it('counts an applied correction under its transition, not before any transition', async () => {
    const intent = await makeIntent('PROCESSED');
    await reevaluateIntent({ id: intent.id, diff: { amount: 1 }, source: 'test', reason: 'first' }, tester);
    await reevaluateIntent({ id: intent.id, diff: { amount: 2 }, source: 'test', reason: 'second' }, tester);
    await flushOutcomes();
    const report = await contentionReport({ window: '15m' });
    const success = (name: string) => report.byTransition.find((t) => t.name === name)?.success ?? 0;
    expect(success('PROCESSED → CORRECTED')).toBe(1);
    expect(success('CORRECTED → CORRECTED')).toBe(1);
    expect(success('before any transition')).toBe(0);
  });

  it('does not count a NOWAIT refusal as a wait', async () => {
    const intent = await makeIntent('PROCESSED');
    const holder = await client('bridge-test:holder');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    const refused = await updateIntentStatus({ id: intent.id, status: 'COMPLETED', nowait: true }, tester).catch((e) => e);
    expect(refused.code).toBe('lock_timeout');
    await holder.query('ROLLBACK');
    await flushOutcomes();
    const report = await contentionReport({ window: '15m' });
    expect(report.totals.lockTimeouts).toBe(1);
    expect(report.lockWait.byOperation.find((o) => o.operation === 'update_status')?.timedOut ?? 0).toBe(0);
  });

  it('lists a real deadlock with Postgres’ detail and its intents, and Postgres’ own counter sees it too', async () => {
    const before = (await contentionReport({ window: '15m' })).deadlocks.postgres.total;
    let a = '';
    let b = '';
    let victimWasOther = 0;
    // Postgres checks for a deadlock once, deadlock_timeout (100 ms here) after a backend starts waiting. The engine
    // waits first, so it is the victim when the cycle closes within those 100 ms — almost always. On a machine too
    // busy for that, the plain session finds the cycle itself (after its own 10 s) and is the victim: that round
    // proves nothing about the engine, so it is run again with fresh rows.
    for (let round = 1; ; round++) {
      [a, b] = (await Promise.all([makeIntent(), makeIntent()])).map((i) => i.id).sort();
      const other = await client('psql');
      await other.query("SET deadlock_timeout = '10s'");
      await other.query('BEGIN');
      await other.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [b]);
      // Bulk locks in id order: it gets a, then waits for b …
      const bulk = start(bulkUpdateStatus({ ids: [a, b], status: 'NORMALIZED' }, tester));
      await waitForWaiters(1);
      // … while the plain session now wants a: a cycle. The engine is chosen as victim, records it, and retries.
      const otherWants = await other.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [a]).then(
        () => 'locked',
        (err: { code?: string }) => err.code,
      );
      if (otherWants === '40P01' && round < 3) {
        victimWasOther++;
        await other.query('ROLLBACK');
        await bulk;
        await resetDatabase();
        continue;
      }
      expect(otherWants).toBe('locked');
      await other.query('COMMIT');
      const result = await bulk;
      expect(result.intents.map((i) => i.status)).toEqual(['NORMALIZED', 'NORMALIZED']);
      break;
    }
    await flushOutcomes();

    const report = await contentionReport({ window: '1h' });
    expect(report.totals.deadlocks).toBe(1);
    expect(report.deadlocks.app).toMatchObject({ inWindow: 1, retriedInWindow: 1, allTime: 1 });
    expect(report.deadlocks.recent).toHaveLength(1);
    expect(report.deadlocks.recent[0]).toMatchObject({ operation: 'bulk_update_status', retried: true, attempt: 1 });
    expect(report.deadlocks.recent[0].intentIds.sort()).toEqual([a, b]);
    expect(report.deadlocks.recent[0].detail).toMatch(/Process \d+ waits for ShareLock on transaction \d+; blocked by process \d+/);

    // Postgres reports its counter to the statistics system asynchronously: wait for it to move.
    const total = await eventually('Postgres to count the deadlock', async () => {
      const now = (await contentionReport({ window: '1h' })).deadlocks.postgres.total;
      return now > before && now;
    }, { everyMs: 50 });
    expect(total).toBe(before + 1 + victimWasOther);
  });
});

describe('GET /api/console/contention', () => {
  beforeEach(async () => {
    await resetAuth();
  });

  it('answers a reader, refuses a bad window with 400 and a stranger with 401', async () => {
    const { authorization } = await userWithToken(['viewer']);
    const ok = await GET(apiRequest('/api/console/contention?window=24h', { headers: { authorization } }), undefined);
    expect(ok.status).toBe(200);
    const body = await ok.json();
    expect(body.window).toBe('24h');
    expect(body.timeline).toHaveLength(96);
    const bad = await GET(apiRequest('/api/console/contention?window=7d', { headers: { authorization } }), undefined);
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.details.fields[0].field).toBe('window');
    expect((await GET(apiRequest('/api/console/contention'), undefined)).status).toBe(401);
  });
});
