import type pg from 'pg';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { previewBatch } from '@/lib/bulk/batches';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { countsUnder } from '@/lib/search/intents';
import { resetEngine } from '../barriers';
import { makeIntent, rawClient, tester } from '../helpers';
import { api, namedFields, signInApiCaller } from '../api/route-client';

/**
 * The Contention page's figures open the Intents page on the intents behind them: the engine keeps which intents
 * met which outcome per minute, and the list, the counts and bulk-by-filter take that as a filter (`contention`,
 * with an operation and a time span), at both doors.
 */
const clients: pg.Client[] = [];

beforeAll(async () => {
  await resetEngine();
  await signInApiCaller();
});
beforeEach(resetEngine);
afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => undefined);
});

/** A lock timeout on `id`: a plain session holds its row while a status change waits 50 ms for it. */
async function timeOut(id: string): Promise<void> {
  const holder = await rawClient('bridge-test:holder');
  clients.push(holder);
  await holder.query('BEGIN');
  await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [id]);
  const err = await updateIntentStatus({ id, status: 'COMPLETED' }, tester, { lockTimeoutMs: 50 }).catch((e) => e);
  expect(err.code).toBe('lock_timeout');
  await holder.query('ROLLBACK');
}

describe('the intents behind a contention figure', () => {
  it('lists exactly the intents that met the outcome, by operation and time span, at the API door', async () => {
    const [timedOut, conflicted, quiet] = await Promise.all([makeIntent('PROCESSED'), makeIntent('PROCESSED'), makeIntent('PROCESSED')]);
    const before = new Date(Date.now() - 60_000).toISOString();
    await timeOut(timedOut.id);
    // A stale correction: refused as a conflict.
    await reevaluateIntent({ id: conflicted.id, diff: { a: 1 }, source: 't', reason: 'r', expectedVersion: conflicted.version }, tester);
    const stale = await reevaluateIntent({ id: conflicted.id, diff: { a: 2 }, source: 't', reason: 'r', expectedVersion: conflicted.version }, tester).catch((e) => e);
    expect(stale.code).toBe('version_conflict');
    await flushOutcomes();

    const ids = async (query: Record<string, string>) => {
      const res = await api.list(query);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.items.map((i: { id: string }) => i.id);
    };
    expect(await ids({ contention: 'lockTimeouts' })).toEqual([timedOut.id]);
    expect(await ids({ contention: 'conflicts' })).toEqual([conflicted.id]);
    expect(await ids({ contention: 'lockTimeouts', contentionOperation: 'update_status', contentionFrom: before })).toEqual([timedOut.id]);
    // Another operation, or a span that ended before it happened: nothing.
    expect(await ids({ contention: 'lockTimeouts', contentionOperation: 'reevaluate' })).toEqual([]);
    expect(await ids({ contention: 'lockTimeouts', contentionTo: before })).toEqual([]);
    expect(await ids({ contention: 'deadlocks' })).toEqual([]);
    // The rest of the list's filters still apply on top.
    expect(await ids({ contention: 'lockTimeouts', status: 'COMPLETED' })).toEqual([]);
    expect(quiet.id).not.toBe(timedOut.id);

    const counts = await countsUnder({ contention: 'lockTimeouts' });
    expect(counts).toMatchObject({ total: 1, exact: true, counts: { PROCESSED: 1 } });
  });

  it('refuses refinements without the figure, and a span that runs backwards, naming the field; unknown figures too', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ contentionOperation: 'update_status' }, 'contention'],
      [{ contentionFrom: '2026-01-01T00:00:00Z' }, 'contention'],
      [{ contention: 'lockTimeouts', contentionFrom: '2026-01-02T00:00:00Z', contentionTo: '2026-01-01T00:00:00Z' }, 'contentionTo'],
      [{ contention: 'slowness' }, 'contention'],
      [{ contention: 'conflicts', contentionOperation: 'DROP TABLE' }, 'contentionOperation'],
      [{ contention: 'conflicts', contentionFrom: 'yesterday' }, 'contentionFrom'],
    ];
    for (const [query, field] of cases) {
      const res = await api.list(query);
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect(namedFields(res)).toContain(field);
    }
    await expect(countsUnder({ contentionTo: '2026-01-01T00:00:00Z' })).rejects.toMatchObject({ httpStatus: 400, details: { fields: [{ field: 'contention' }] } });
  });

  it('bulk-by-filter previews the same intents the filtered list shows', async () => {
    const [a, b] = await Promise.all([makeIntent('PROCESSED'), makeIntent('PROCESSED')]);
    await timeOut(a.id);
    await flushOutcomes();
    expect(await previewBatch({ filter: { contention: 'lockTimeouts' }, to: 'FAILED' })).toMatchObject({ matching: 1, movable: 1 });
    expect(await previewBatch({ filter: {}, to: 'FAILED' })).toMatchObject({ matching: 2 });
    expect(b.id).not.toBe(a.id);
    await expect(previewBatch({ filter: { contentionFrom: '2026-01-01T00:00:00Z' }, to: 'FAILED' })).rejects.toMatchObject({ httpStatus: 400 });
  });
});
