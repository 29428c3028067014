import { beforeEach, describe, expect, it } from 'vitest';
import { CHUNK, getBatch, previewBatch, resumeAbandonedBatches, runBatch, startBatch, cancelBatch, NothingToMoveError } from '@/lib/bulk/batches';
import { db } from '@/lib/db/client';
import { ValidationError } from '@/lib/shared/errors';
import { ForbiddenError } from '@/lib/auth/errors';
import { actorOf, makeUser, resetAuth } from '../auth-helpers';
import { makeIntent, rawClient, resetDatabase } from '../helpers';
import { waitForWaiters } from '../barriers';
import { eventually } from '../wait';

/**
 * Bulk on everything matching a filter, against a real database: the preview's counts are what the batch does,
 * it moves only what can move (in chunks, each through the engine), is audited as one batch, can be cancelled,
 * and a batch whose runner died is resumed by one instance after its cursor.
 */
let operator: ReturnType<typeof actorOf>;

async function untilDone(id: string) {
  return eventually(`batch ${id} to finish`, async () => {
    const b = await getBatch(id);
    return b.status !== 'running' && b;
  });
}

async function statuses(marker: string) {
  const rows = await db().$queryRaw<{ status: string; n: bigint }[]>`
    SELECT status::text, count(*) AS n FROM intents WHERE payload->>'marker' = ${marker} GROUP BY status ORDER BY status`;
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

beforeEach(async () => {
  await resetDatabase();
  await resetAuth();
  operator = actorOf((await makeUser(['operator'])).user, 'session');
});

describe('bulk by filter', () => {
  it('previews what will happen and then does exactly that, in chunks, audited as one batch', async () => {
    const marker = 'bulk-a';
    for (let i = 0; i < CHUNK + 30; i++) await makeIntent('RECEIVED', { marker, i });
    for (let i = 0; i < 4; i++) await makeIntent('COMPLETED', { marker, i });
    for (let i = 0; i < 3; i++) await makeIntent('FAILED', { marker, i });
    await makeIntent('RECEIVED', { marker: 'someone-else' });

    const preview = await previewBatch({ filter: { q: marker }, to: 'FAILED' });
    expect(preview).toMatchObject({ matching: CHUNK + 37, movable: CHUNK + 30, already: 3, blocked: 4 });

    const started = await startBatch(operator, { filter: { q: marker }, to: 'FAILED', reason: 'partner outage' }, { run: false });
    expect(started).toMatchObject({ status: 'running', planned: CHUNK + 30 });
    await runBatch(started.id);
    const done = await getBatch(started.id);
    expect(done).toMatchObject({ status: 'finished', moved: CHUNK + 30, skipped: 0 });
    expect(await statuses(marker)).toEqual({ COMPLETED: 4, FAILED: CHUNK + 33 });
    expect(await statuses('someone-else')).toEqual({ RECEIVED: 1 });

    const changes = await db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM audit_events WHERE action = 'bulk_status_change' AND details->>'batchId' = ${started.id}`;
    expect(Number(changes[0].n)).toBe(CHUNK + 30);
    const records = await db().$queryRaw<{ phase: string; moved: number | null; actor: string }[]>`
      SELECT details->>'phase' AS phase, (details->>'moved')::int AS moved, actor FROM audit_events WHERE action = 'bulk_batch' ORDER BY id`;
    expect(records).toEqual([
      { phase: 'started', moved: null, actor: operator.name },
      { phase: 'finished', moved: CHUNK + 30, actor: operator.name },
    ]);
  });

  it('leaves out intents that changed meanwhile instead of failing the chunk', async () => {
    const marker = 'bulk-b';
    const intents = [];
    for (let i = 0; i < 6; i++) intents.push(await makeIntent('RECEIVED', { marker, i }));
    const batch = await startBatch(operator, { filter: { q: marker }, to: 'NORMALIZED' }, { run: false });
    // Between the preview and the run someone fails two of them: they can no longer move to NORMALIZED.
    await db().$executeRaw`UPDATE intents SET status = 'FAILED', version = version + 1 WHERE id = ANY(${[intents[1].id, intents[4].id]}::uuid[])`;
    await runBatch(batch.id);
    expect(await getBatch(batch.id)).toMatchObject({ status: 'finished', moved: 4 });
    expect(await statuses(marker)).toEqual({ FAILED: 2, NORMALIZED: 4 });
  });

  it('stops after the current chunk when cancelled; what moved stays moved', async () => {
    const marker = 'bulk-c';
    for (let i = 0; i < CHUNK * 2 + 5; i++) await makeIntent('RECEIVED', { marker, i });
    const batch = await startBatch(operator, { filter: { q: marker }, to: 'NORMALIZED' }, { run: false });
    // A row lock on the first intent of the second chunk holds the run there while the cancel arrives.
    const [{ id: secondChunkFirst }] = await db().$queryRaw<{ id: string }[]>`
      SELECT id::text FROM intents WHERE payload->>'marker' = ${marker} ORDER BY id OFFSET ${CHUNK} LIMIT 1`;
    const holder = await rawClient('bulk-test holder');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [secondChunkFirst]);
    const running = runBatch(batch.id);
    await waitForWaiters(1);
    await cancelBatch(operator, batch.id);
    await holder.query('ROLLBACK');
    await holder.end();
    await running;
    const done = await getBatch(batch.id);
    expect(done.status).toBe('cancelled');
    expect(done.moved).toBe(CHUNK * 2);
    expect(await statuses(marker)).toEqual({ NORMALIZED: CHUNK * 2, RECEIVED: 5 });
  });

  it('is resumed after its cursor by exactly one instance when its runner stopped', async () => {
    const marker = 'bulk-d';
    for (let i = 0; i < 12; i++) await makeIntent('RECEIVED', { marker, i });
    const batch = await startBatch(operator, { filter: { q: marker }, to: 'NORMALIZED' }, { run: false });
    // The runner died without a word: its heartbeat is old and it is named after a process that is gone.
    await db().$executeRaw`UPDATE bulk_batches SET runner = 'gone:1', heartbeat_at = now() - interval '1 minute' WHERE id = ${batch.id}::uuid`;
    const [first, second] = await Promise.all([resumeAbandonedBatches(), resumeAbandonedBatches()]);
    expect([...first, ...second]).toEqual([batch.id]);
    expect(await untilDone(batch.id)).toMatchObject({ status: 'finished', moved: 12 });
    expect(await statuses(marker)).toEqual({ NORMALIZED: 12 });
  });

  it('refuses what it cannot do: nothing movable, no reason for FAILED, a bad filter, a viewer', async () => {
    await makeIntent('COMPLETED', { marker: 'bulk-e' });
    await expect(startBatch(operator, { filter: { q: 'bulk-e' }, to: 'NORMALIZED' })).rejects.toBeInstanceOf(NothingToMoveError);
    const noReason = await startBatch(operator, { filter: { q: 'bulk-e' }, to: 'FAILED' }).catch((e) => e);
    expect(noReason).toBeInstanceOf(ValidationError);
    expect(noReason.issues[0].field).toBe('reason');
    const badFilter = await previewBatch({ filter: { status: 'LOST' }, to: 'FAILED' }).catch((e) => e);
    expect(badFilter.issues[0].field).toBe('filter.status');
    const viewer = actorOf((await makeUser(['viewer'])).user, 'session');
    await expect(startBatch(viewer, { filter: {}, to: 'FAILED', reason: 'x' })).rejects.toBeInstanceOf(ForbiddenError);
    const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM bulk_batches`;
    expect(Number(n)).toBe(0);
  });
});
