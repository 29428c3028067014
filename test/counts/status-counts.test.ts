import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { foldStatusDeltas, maintainedStatusCounts } from '@/lib/counts/status-counts';
import { db } from '@/lib/db/client';
import { bulkUpdateStatus, createIntent, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { INTENT_STATUSES, type IntentStatus } from '@/lib/shared/intent-states';
import { makeIntent, rawClient, resetDatabase, tester } from '../helpers';

/**
 * The maintained status counts (triggers on intents → deltas → totals) must always equal counting the rows: after
 * every kind of write, with deltas folded or not, under concurrent writers and a concurrent fold, after a rollback.
 */
const held: pg.Client[] = [];
beforeEach(resetDatabase);
afterEach(async () => {
  for (const c of held.splice(0)) await c.end().catch(() => undefined);
});

async function countedRows(includeReplay = false): Promise<Record<IntentStatus, number>> {
  const rows = await db().$queryRaw<{ status: IntentStatus; n: bigint }[]>`
    SELECT status::text AS status, count(*) AS n FROM intents WHERE ${includeReplay} OR NOT is_replay GROUP BY status`;
  const counts = Object.fromEntries(INTENT_STATUSES.map((s) => [s, 0])) as Record<IntentStatus, number>;
  for (const r of rows) counts[r.status] = Number(r.n);
  return counts;
}

async function expectExact() {
  expect(await maintainedStatusCounts()).toEqual(await countedRows());
  expect(await maintainedStatusCounts({ includeReplay: true })).toEqual(await countedRows(true));
}

describe('maintained status counts', () => {
  it('follow creates, status updates, bulk updates, corrections and deletes, folded or not', async () => {
    const a = await makeIntent('PROCESSED');
    const b = await makeIntent('RECEIVED');
    const c = await makeIntent('NORMALIZED');
    await expectExact();
    await foldStatusDeltas();
    await expectExact();
    await updateIntentStatus({ id: a.id, status: 'COMPLETED' }, tester);
    await bulkUpdateStatus({ ids: [b.id, c.id], status: 'FAILED' }, tester);
    await expectExact();
    const d = await makeIntent('PROCESSED');
    await reevaluateIntent({ id: d.id, diff: { adjusted: true }, source: 'test', reason: 'counts' }, tester);
    await expectExact();
    await db().$executeRaw`DELETE FROM intents WHERE id = ${b.id}::uuid`;
    await db().$executeRaw`UPDATE intents SET is_replay = true WHERE id = ${c.id}::uuid`;
    await expectExact();
    expect(await foldStatusDeltas()).toBeGreaterThan(0);
    await expectExact();
    expect(Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM intent_status_deltas`)[0].n)).toBe(0);
  });

  it('count a set-based insert of many rows once per status, and start from zero after TRUNCATE', async () => {
    await db().$executeRaw`
      INSERT INTO intents (id, status, payload, source)
      SELECT gen_random_uuid(), (ARRAY['RECEIVED','FAILED','COMPLETED'])[1 + g % 3]::"IntentStatus", '{}'::jsonb, 'sql' FROM generate_series(1, 3000) g`;
    expect(Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM intent_status_deltas`)[0].n)).toBe(3);
    await expectExact();
    await resetDatabase();
    expect(await maintainedStatusCounts()).toEqual(await countedRows());
    expect(Object.values(await maintainedStatusCounts()).every((n) => n === 0)).toBe(true);
  });

  it('leave out what a rolled-back transaction changed', async () => {
    const a = await makeIntent('RECEIVED');
    const client = await rawClient();
    held.push(client);
    await client.query('BEGIN');
    await client.query(`UPDATE intents SET status = 'FAILED' WHERE id = $1`, [a.id]);
    // Uncommitted: neither the rows nor the counts show it, and a fold meanwhile leaves its deltas alone.
    await expectExact();
    await foldStatusDeltas();
    await client.query('ROLLBACK');
    await expectExact();
    expect((await maintainedStatusCounts()).RECEIVED).toBe(1);
  });

  it('stay exact under concurrent status updates from many connections while folds run', async () => {
    const intents = await Promise.all(Array.from({ length: 40 }, (_, i) => createIntent({ payload: { n: i }, source: 'test' }, tester)));
    let writing = true;
    const folds = (async () => {
      let n = 0;
      while (writing) n += await foldStatusDeltas();
      return n;
    })();
    await Promise.all(intents.map((i) => updateIntentStatus({ id: i.id, status: 'NORMALIZED' }, tester)));
    await Promise.all(intents.map((i, k) => updateIntentStatus({ id: i.id, status: k % 2 ? 'PROCESSED' : 'FAILED' }, tester)));
    writing = false;
    await folds;
    await expectExact();
    expect(await maintainedStatusCounts()).toMatchObject({ RECEIVED: 0, NORMALIZED: 0, PROCESSED: 20, FAILED: 20 });
  });

  it('let one fold run at a time: a second returns at once instead of queueing', async () => {
    await makeIntent('RECEIVED');
    const client = await rawClient();
    held.push(client);
    await client.query('BEGIN');
    await client.query('SELECT bridge_fold_status_deltas()');
    // The first fold holds its lock until commit; this one does not wait for it.
    expect(await foldStatusDeltas()).toBe(0);
    await client.query('COMMIT');
    await expectExact();
  });

  it('keep status updates from waiting on each other: a held status change does not block another intent’s', async () => {
    const [a, b] = await Promise.all([makeIntent('RECEIVED'), makeIntent('RECEIVED')]);
    const client = await rawClient();
    held.push(client);
    await client.query('BEGIN');
    await client.query(`UPDATE intents SET status = 'NORMALIZED' WHERE id = $1`, [a.id]);
    // Same statuses, open transaction: with shared counter rows this would wait; appended deltas do not.
    await updateIntentStatus({ id: b.id, status: 'NORMALIZED' }, tester, { lockTimeoutMs: 500 });
    await client.query('COMMIT');
    await expectExact();
  });
});
