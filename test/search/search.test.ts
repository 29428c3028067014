import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { db, planWithValues, preparedStatementName } from '@/lib/db/client';
import { createIntent, updateIntentStatus } from '@/lib/intents/commands';
import { ValidationError } from '@/lib/shared/errors';
import { listIntents } from '@/lib/intents/queries';
import { countsUnder, estimatedCounts, forgetSearchEstimates, resolveSearch, SearchTooSlowError } from '@/lib/search/intents';
import type { Intent } from '@/lib/shared/intent-types';
import { rawClient, resetDatabase, tester } from '../helpers';

/** Search as people paste it, against real rows: ids, sources, displayed payload text, raw JSON, time ranges. */
const held: pg.Client[] = [];
afterEach(async () => {
  for (const c of held.splice(0)) await c.end().catch(() => undefined);
});

let osaka: Intent;
let kyoto: Intent;
let refund: Intent;

// Every test searches these three intents and nothing else: the table is emptied and they are made again before
// each one, so a test that adds an intent of its own, or counts the whole table, does not depend on which ran before.
beforeEach(async () => {
  await resetDatabase();
  osaka = await createIntent({ payload: { kind: 'payment', amount: 629.13, customer: { id: 'C8919', city: 'Osaka' } }, source: 'checkout-service' }, tester);
  kyoto = await createIntent({ payload: { kind: 'payment', amount: 12.5, customer: { id: 'C1000', city: 'Kyoto' } }, source: 'billing-sync' }, tester);
  refund = await createIntent({ payload: { kind: 'refund', amount: 629.1, note: 'Osaka branch' }, source: 'billing-sync' }, tester);
  await updateIntentStatus({ id: kyoto.id, status: 'FAILED' }, tester);
  // The planner's estimates come from the table's statistics, which otherwise still describe whatever an earlier file
  // in this worker left (TRUNCATE keeps them): a broad search on three rows would be "estimated" from hundreds.
  await db().$executeRaw`ANALYZE intents`;
  // Estimates are kept in the process for a minute: an earlier test's would answer a search this one plans itself.
  forgetSearchEstimates();
});

const ids = async (input: Parameters<typeof listIntents>[0]) => (await listIntents(input)).items.map((i) => i.id).sort();

describe('search', () => {
  it('finds an intent by its whole id and by its short id, and says to open it', async () => {
    expect(await ids({ q: osaka.id })).toEqual([osaka.id]);
    expect(await ids({ q: osaka.id.toUpperCase() })).toEqual([osaka.id]);
    expect(await ids({ q: osaka.id.slice(0, 8) })).toEqual([osaka.id]);
    expect((await resolveSearch(osaka.id.slice(0, 8))).jumpTo).toBe(osaka.id);
  });

  it('takes a source, by name or as source:name', async () => {
    expect(await ids({ q: 'billing-sync' })).toEqual([kyoto.id, refund.id].sort());
    expect(await ids({ q: 'source: checkout-service' })).toEqual([osaka.id]);
    expect(await ids({ source: 'billing-sync', status: 'FAILED' })).toEqual([kyoto.id]);
  });

  it('takes payload text as the table displays it', async () => {
    expect(await ids({ q: 'city: Osaka' })).toEqual([osaka.id]);
    expect(await ids({ q: 'customer.city: osaka' })).toEqual([osaka.id]);
    expect(await ids({ q: 'amount: 629.13' })).toEqual([osaka.id]);
    expect(await ids({ q: 'kind: payment · amount: 12.5' })).toEqual([kyoto.id]);
    expect(await ids({ q: 'Osaka' })).toEqual([osaka.id, refund.id].sort());
  });

  it('takes raw JSON fragments in any spacing', async () => {
    expect(await ids({ q: '{"city":"Osaka"}' })).toEqual([osaka.id]);
    expect(await ids({ q: '"city" :  "Kyoto"' })).toEqual([kyoto.id]);
    expect(await ids({ q: '{ "customer": { "city": "Osaka", "id": "C8919" } }' })).toEqual([osaka.id]);
    expect(await ids({ q: '"amount":629.1' })).toEqual([osaka.id, refund.id].sort());
  });

  it('filters by a time range of the last update, and refuses one that ends before it starts', async () => {
    const [{ at }] = await db().$queryRaw<{ at: Date }[]>`SELECT updated_at AS at FROM intents WHERE id = ${kyoto.id}::uuid`;
    expect(await ids({ from: at.toISOString(), to: new Date(at.getTime() + 1).toISOString() })).toEqual([kyoto.id]);
    expect(await ids({ from: new Date(at.getTime() + 1).toISOString() })).not.toContain(kyoto.id);
    await expect(listIntents({ from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' })).rejects.toMatchObject({ issues: [{ field: 'to' }] });
    await expect(listIntents({ from: 'yesterday' })).rejects.toBeInstanceOf(ValidationError);
  });

  it('refuses payload terms too short for the index, naming the field', async () => {
    await expect(listIntents({ q: 'xy' })).rejects.toMatchObject({ issues: [{ field: 'q' }] });
  });

  it('counts under a search exactly up to the cap, then as at least the cap', async () => {
    expect(await countsUnder({ q: 'Osaka' })).toMatchObject({ exact: true, capped: false, estimated: false, total: 2, counts: { RECEIVED: 2, FAILED: 0 } });
    expect(await countsUnder({ source: 'billing-sync' })).toMatchObject({ exact: true, total: 2, counts: { RECEIVED: 1, FAILED: 1 } });
    const capped = await countsUnder({ q: 'kind' }, { cap: 2 });
    expect(capped).toMatchObject({ exact: false, capped: true, total: 2, cap: 2 });
    expect(await countsUnder({})).toMatchObject({ exact: true, total: 3, counts: { RECEIVED: 2, FAILED: 1 } });
  });

  it('answers a payload search that cannot finish in time with 422 instead of waiting, and counts as unknown', async () => {
    // A lock held on the table stands in for a scan too long to wait for: the statement timeout ends both.
    const client = await rawClient();
    held.push(client);
    await client.query('BEGIN');
    await client.query('LOCK TABLE intents IN ACCESS EXCLUSIVE MODE');
    await expect(listIntents({ q: 'city: Osaka' })).rejects.toBeInstanceOf(SearchTooSlowError);
    expect(await countsUnder({ q: 'city: Osaka' })).toMatchObject({ counts: null, total: null, exact: false, estimated: false });
    await client.query('ROLLBACK');
    expect(new SearchTooSlowError('list').httpStatus).toBe(422);
  });

  it('a narrow search it could not count in time is unknown, not the planner’s “about 1”', async () => {
    // Counted once (nothing matches), which leaves the planner's estimate of it remembered.
    expect(await countsUnder({ q: 'city: Lima' })).toMatchObject({ exact: true, total: 0 });
    const client = await rawClient();
    held.push(client);
    await client.query('BEGIN');
    await client.query('LOCK TABLE intents IN ACCESS EXCLUSIVE MODE');
    expect(await countsUnder({ q: 'city: Lima' })).toMatchObject({ counts: null, total: null, exact: false, estimated: false });
    await client.query('ROLLBACK');
  });

  it('plans a search once: asked again, it answers from the planner’s estimate without planning on the table', async () => {
    // A cap of 0 makes any match "too many to count", so the answer is the planner's estimate.
    const first = await countsUnder({ q: 'kind: payment' }, { cap: 0 });
    expect(first).toMatchObject({ estimated: true, exact: false });
    // With the table locked, planning it again would wait out the time bound and answer "unknown"; the estimate
    // it already has is used instead, spread over the counts (which are not read from the table).
    const client = await rawClient();
    held.push(client);
    await client.query('BEGIN');
    await client.query('LOCK TABLE intents IN ACCESS EXCLUSIVE MODE');
    expect(await countsUnder({ q: 'kind: payment' }, { cap: 0 })).toEqual(first);
    // A search it has not planned yet does wait for the table, and says it could not count.
    expect(await countsUnder({ q: 'kind: refund' }, { cap: 0 })).toMatchObject({ counts: null, estimated: false });
    await client.query('ROLLBACK');
  });

  it('estimates counts it cannot afford to count, spread over the statuses and said to be estimates', async () => {
    const answer = estimatedCounts(3000, { RECEIVED: 2, NORMALIZED: 0, PROCESSED: 0, CORRECTED: 0, COMPLETED: 0, FAILED: 1 }, 10_000);
    expect(answer).toMatchObject({ estimated: true, exact: false, capped: false, total: 3000, counts: { RECEIVED: 2000, FAILED: 1000, COMPLETED: 0 } });
  });

  it('plans each search with its values: no search or list statement is kept as a prepared statement', async () => {
    // A kept statement turns generic after five runs, and the generic plan of "does an intent have this source"
    // reads the whole table for a source that does not exist. Run each kind more than five times on one connection
    // and look at what that connection keeps.
    const kept = await db().$transaction(async (tx) => {
      for (let i = 0; i < 7; i++) await resolveSearch('no-such-source', false, tx);
      return tx.$queryRaw<{ statement: string }[]>`SELECT statement FROM pg_prepared_statements`;
    });
    expect(kept.filter((k) => /source\s*=/.test(k.statement))).toEqual([]);
    expect(preparedStatementName({ sql: `${planWithValues.sql}SELECT 1 WHERE $1`, args: [true] })).toBe('');
    expect(preparedStatementName({ sql: 'SELECT 1 WHERE $1', args: [true] })).toMatch(/^bc_/);
  });

  it('takes an id prefix of any length, with the intents that mention the text in their payload', async () => {
    for (const length of [1, 2, 4, 7]) expect(await ids({ q: osaka.id.slice(0, length).toUpperCase() }), `${length} characters`).toContain(osaka.id);
    const mentions = await createIntent({ payload: { note: `see ${kyoto.id.slice(0, 5)}` }, source: 'e2e-notes' }, tester);
    const found = await ids({ q: kyoto.id.slice(0, 5) });
    expect(found).toEqual(expect.arrayContaining([kyoto.id, mentions.id]));
    expect((await resolveSearch(kyoto.id.slice(0, 5))).kind).toBe('idOrPayload');
    expect(await ids({ q: 'c7g4' })).toEqual([]);
  });
});
