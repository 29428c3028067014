import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { emitEvent } from '@/lib/events/emit';
import { EVENT_SCHEMAS } from '@/lib/events/payloads';
import { purgePublishedEvents } from '@/lib/events/relay';
import { SUBJECTS, type Subject } from '@/lib/events/subjects';
import { bulkUpdateStatus, createIntent, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { PostgresLeases } from '@/lib/leases/postgres';
import { runPipeline } from '@/lib/pipeline/run';
import { makeIntent, rawClient, resetDatabase, tester } from '../helpers';

/**
 * The transactional outbox: every change other services care about writes its event in the same transaction,
 * whichever code path made it (the triggers sit on the tables of record), with the versioned payload of
 * lib/events/payloads.ts.
 */
type Row = { id: bigint; eventId: string; subject: Subject; orderingKey: string; partition: number; payload: Record<string, unknown> };

async function outbox(): Promise<Row[]> {
  return db().$queryRaw<Row[]>`SELECT id, event_id::text AS "eventId", subject, ordering_key AS "orderingKey", partition, payload FROM outbox_events ORDER BY id`;
}

/** As the relay publishes it: the payload with the event id. */
function expectValid(row: Row) {
  const parsed = EVENT_SCHEMAS[row.subject].safeParse({ ...row.payload, id: row.eventId });
  expect(parsed.success, `${row.subject}: ${parsed.error?.message}\n${JSON.stringify(row.payload)}`).toBe(true);
}

beforeEach(resetDatabase);

describe('the outbox, fed by triggers', () => {
  it('writes created, status_changed, corrected and conflict events with the versioned payload', async () => {
    const intent = await createIntent({ payload: { order: 'O-1', amount: 5 }, source: 'checkout' }, tester);
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester);
    await updateIntentStatus({ id: intent.id, status: 'PROCESSED', idempotencyKey: 'k-1' }, tester);
    await reevaluateIntent({ id: intent.id, diff: { amount: 4 }, source: 'desk', reason: 'discount' }, tester);
    await expect(updateIntentStatus({ id: intent.id, status: 'COMPLETED', expectedVersion: 1 }, tester)).rejects.toMatchObject({ code: 'version_conflict' });

    const rows = await outbox();
    expect(rows.map((r) => [r.subject, r.payload.version])).toEqual([
      [SUBJECTS.intentCreated, 0],
      [SUBJECTS.statusChanged, 1],
      [SUBJECTS.statusChanged, 2],
      [SUBJECTS.corrected, 3],
      [SUBJECTS.conflict, 3],
    ]);
    rows.forEach(expectValid);
    expect(new Set(rows.map((r) => r.orderingKey))).toEqual(new Set([intent.id]));
    expect(new Set(rows.map((r) => r.partition)).size).toBe(1);
    expect(rows[1].payload).toMatchObject({ specVersion: 1, intentId: intent.id, actor: tester.name, data: { from: 'RECEIVED', to: 'NORMALIZED', versionBefore: 0 } });
    expect(rows[3].payload.data).toMatchObject({ diff: { amount: 4 }, reason: 'discount', source: 'desk', from: 'PROCESSED', to: 'CORRECTED' });
    expect(rows[4].payload.data).toMatchObject({ expectedVersion: 1, currentVersion: 3 });
  });

  it('writes one event per intent of a bulk update, and none for a refused or already-applied change', async () => {
    const a = await makeIntent('NORMALIZED');
    const b = await makeIntent('NORMALIZED');
    await resetOutbox();
    await bulkUpdateStatus({ ids: [a.id, b.id], status: 'PROCESSED' }, tester);
    await updateIntentStatus({ id: a.id, status: 'PROCESSED' }, tester); // already applied
    await expect(updateIntentStatus({ id: a.id, status: 'RECEIVED' }, tester)).rejects.toMatchObject({ code: 'invalid_transition' });
    const rows = await outbox();
    expect(rows.map((r) => r.subject)).toEqual([SUBJECTS.statusChanged, SUBJECTS.statusChanged]);
    expect(rows.map((r) => r.payload.intentId).sort()).toEqual([a.id, b.id].sort());
    expect(rows.every((r) => (r.payload.data as { action: string }).action === 'bulk_status_change')).toBe(true);
  });

  it('is written in the transaction of the change: rolled back with it', async () => {
    const intent = await makeIntent('RECEIVED');
    await resetOutbox();
    await expect(
      db().$transaction(async (tx) => {
        await tx.$executeRaw`UPDATE intents SET status = 'NORMALIZED', version = version + 1 WHERE id = ${intent.id}::uuid`;
        await tx.$executeRaw`INSERT INTO audit_events (intent_id, action, actor, from_status, to_status, version_before, version_after)
                             VALUES (${intent.id}::uuid, 'status_change', 'psql', 'RECEIVED', 'NORMALIZED', 0, 1)`;
        expect((await tx.$queryRaw<unknown[]>`SELECT 1 FROM outbox_events`).length).toBe(1);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await outbox()).toEqual([]);
  });

  it('leaves the contention replay’s synthetic intents out', async () => {
    await db().$executeRaw`
      WITH i AS (INSERT INTO intents (id, status, payload, source, is_replay) VALUES (gen_random_uuid(), 'RECEIVED', '{}', 'replay', true) RETURNING id)
      INSERT INTO audit_events (intent_id, action, actor, to_status, version_after) SELECT id, 'created', 'replay', 'RECEIVED', 0 FROM i`;
    expect(await outbox()).toEqual([]);
  });

  it('sends the ordinary intents’ events of a statement that also wrote a replay’s, and none of the replay’s, from each table', async () => {
    const real = await makeIntent('PROCESSED');
    await resetOutbox();
    const [{ id: synthetic }] = await db().$queryRaw<{ id: string }[]>`
      INSERT INTO intents (id, status, payload, source, is_replay) VALUES (gen_random_uuid(), 'PROCESSED', '{}', 'replay', true) RETURNING id::text`;
    const both = [real.id, synthetic];
    await db().$executeRaw`
      INSERT INTO audit_events (intent_id, action, actor, from_status, to_status, version_before, version_after)
      SELECT id, 'status_change', 'psql', 'PROCESSED', 'COMPLETED', 0, 1 FROM unnest(${both}::uuid[]) id`;
    await db().$executeRaw`
      INSERT INTO corrections (intent_id, correction_id, diff, source, reason, actor, version_before, version_after, status_before, status_after)
      SELECT id, 'c-' || id, '{"amount": 1}', 'desk', 'fix', 'psql', 1, 2, 'PROCESSED', 'CORRECTED' FROM unnest(${both}::uuid[]) id`;
    await db().$executeRaw`
      INSERT INTO conflict_events (intent_id, operation, expected_version, current_version, reason, actor)
      SELECT id, 'update_status', 0, 2, 'stale', 'psql' FROM unnest(${both}::uuid[]) id`;
    const rows = await outbox();
    expect(rows.map((r) => [r.subject, r.orderingKey])).toEqual([
      [SUBJECTS.statusChanged, real.id],
      [SUBJECTS.corrected, real.id],
      [SUBJECTS.conflict, real.id],
    ]);
    rows.forEach(expectValid);
  });

  it('takes events from other writers through bridge_outbox_emit, in their transaction', async () => {
    const id = await db().$transaction((tx) =>
      emitEvent(tx, {
        subject: SUBJECTS.lockAcquired,
        orderingKey: 'intent:42',
        actor: 'reviewer-1',
        data: { resourceId: 'intent:42', ownerId: 'reviewer-1', expiresAt: '2026-11-24T10:00:00.000Z', fencingToken: 7 },
        version: 7,
      }),
    );
    const [row] = await outbox();
    expect(row.id).toBe(id);
    expect(row.payload).toMatchObject({ type: 'evt.lock.acquired', intentId: null, version: 7, data: { resourceId: 'intent:42' } });
    expectValid(row);
  });
});

describe('lease and pipeline events', () => {
  it('writes evt.lock.acquired, denied, released and expired from the lease log, keyed by the resource; refreshes stay out', async () => {
    const leases = new PostgresLeases();
    const caller = { credential: 'token:billing', actor: 'billing-user' };
    const a = await leases.acquire('orders/A-17', 'billing-1', 60_000, caller);
    if (!a.acquired) throw new Error('expected a grant');
    expect((await leases.acquire('orders/A-17', 'billing-2', 60_000)).acquired).toBe(false);
    await leases.refresh('orders/A-17', 'billing-1', a.token, 60_000);
    expect(await leases.release('orders/A-17', 'billing-1', a.token, caller)).toEqual({ released: true });
    const b = await leases.acquire('orders/A-17', 'billing-2', 60_000);
    if (!b.acquired) throw new Error('expected a grant');
    // Its lease runs out by the database's clock; the next acquire notices and records the expiry.
    await db().$executeRaw`UPDATE leases SET expires_at = clock_timestamp() - interval '1 second' WHERE resource = 'orders/A-17'`;
    const c = await leases.acquire('orders/A-17', 'billing-3', 60_000);
    if (!c.acquired) throw new Error('expected a grant');

    const rows = await outbox();
    expect(rows.map((r) => r.subject)).toEqual([
      SUBJECTS.lockAcquired, SUBJECTS.lockDenied, SUBJECTS.lockReleased, SUBJECTS.lockAcquired, SUBJECTS.lockExpired, SUBJECTS.lockAcquired,
    ]);
    rows.forEach(expectValid);
    expect(new Set(rows.map((r) => r.orderingKey))).toEqual(new Set(['orders/A-17']));
    expect(rows[0].payload).toMatchObject({ intentId: null, version: a.token, actor: 'billing-user', data: { resourceId: 'orders/A-17', ownerId: 'billing-1', fencingToken: a.token, backend: 'postgres' } });
    expect(rows[1].payload.data).toMatchObject({ requestedBy: 'billing-2', currentOwner: 'billing-1', reason: 'held' });
    expect(rows[2].payload.data).toMatchObject({ ownerId: 'billing-1', fencingToken: a.token });
    expect(rows[4].payload.data).toMatchObject({ ownerId: 'billing-2', fencingToken: b.token });
    expect(rows[5].payload.data).toMatchObject({ ownerId: 'billing-3', fencingToken: c.token });
  });

  it('writes evt.intent.pipeline_finished when a run ends, after the status changes it made', async () => {
    const intent = await makeIntent('RECEIVED');
    await resetOutbox();
    const { run } = await runPipeline({ id: intent.id }, tester);
    const rows = await outbox();
    rows.forEach(expectValid);
    const last = rows.at(-1)!;
    expect(last.subject).toBe(SUBJECTS.pipelineFinished);
    expect(last.orderingKey).toBe(intent.id);
    expect(last.payload).toMatchObject({ intentId: intent.id, data: { outcome: run.status, runId: run.id, status: 'COMPLETED' } });
    expect(rows.slice(0, -1).every((r) => r.subject !== SUBJECTS.pipelineFinished)).toBe(true);
    expect(rows.some((r) => r.subject === SUBJECTS.statusChanged)).toBe(true);
  });
});

describe('event ids', () => {
  it('gives every event a random UUID of its own, kept with the row (a republish sends the same one)', async () => {
    await makeIntent('PROCESSED');
    const rows = await outbox();
    expect(rows).toHaveLength(3);
    for (const r of rows) expect(r.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(rows.map((r) => r.eventId)).size).toBe(3);
    // Not derived from the row's sequence number, which every database starts at 1.
    await resetDatabase();
    await makeIntent('PROCESSED');
    const again = await outbox();
    expect(again.map((r) => Number(r.id))).toEqual(rows.map((r) => Number(r.id)));
    expect(again.filter((r) => rows.some((o) => o.eventId === r.eventId))).toEqual([]);
    expect((await outbox()).map((r) => r.eventId)).toEqual(again.map((r) => r.eventId));
  });
});

describe('retention', () => {
  it('purges published rows older than the retention period, never unpublished ones', async () => {
    await makeIntent('PROCESSED'); // three events
    await db().$executeRaw`UPDATE outbox_events SET published_at = now() - interval '73 hours', created_at = now() - interval '73 hours' WHERE id = 1`;
    await db().$executeRaw`UPDATE outbox_events SET published_at = now() - interval '1 hour' WHERE id = 2`;
    await db().$executeRaw`UPDATE outbox_events SET created_at = now() - interval '100 hours' WHERE id = 3`;
    const client = await rawClient();
    try {
      expect(await purgePublishedEvents(client, 72)).toBe(1);
    } finally {
      await client.end();
    }
    expect((await outbox()).map((r) => Number(r.id))).toEqual([2, 3]);
  });
});

async function resetOutbox() {
  await db().$executeRaw`TRUNCATE outbox_events`;
}
