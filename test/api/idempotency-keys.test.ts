import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { apiRequest, userWithToken } from '../auth-helpers';
import { closeSession, dbFingerprint, persistedOutcomes, clearOutcomes, resetEngine, session, waitForWaiters } from '../barriers';
import { intentRow, makeIntent } from '../helpers';
import { api, namedFields, signInApiCaller, type RawBody } from './route-client';
import { apiRoute } from '@/lib/http/api-router';

const { POST: createRoute } = apiRoute('/api/intents');

/**
 * Idempotency keys on every command that takes one — creating an intent, a status change, a correction — given as
 * the body's `idempotencyKey` or as the `Idempotency-Key` header, with one meaning: a create retried after a lost
 * answer or a 503 makes one intent, even when the retries arrive together.
 */
beforeAll(async () => {
  await resetEngine();
  await signInApiCaller();
});
beforeEach(resetEngine);

/** The body sent as JSON with the key in the Idempotency-Key header. */
function withHeader(body: unknown, key: string): RawBody {
  return { raw: JSON.stringify(body), headers: { 'Idempotency-Key': key } };
}

async function intentCount(): Promise<number> {
  const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM intents`;
  return Number(n);
}

const order = { payload: { order: 'A-17', amount: 120 }, source: 'checkout' };

describe('POST /api/intents with an idempotency key', () => {
  it('a repeat answers the first 201 byte for byte, marked replayed, and creates nothing', async () => {
    const first = await api.create({ ...order, idempotencyKey: 'create-1' });
    expect(first.status).toBe(201);
    expect(first.headers.get('Idempotent-Replayed')).toBeNull();
    await api.status(first.body.id, { status: 'NORMALIZED' });
    const again = await api.create({ ...order, idempotencyKey: 'create-1' });
    expect(again.status).toBe(201);
    // The intent as the first request created it, though it has moved on since.
    expect(again.body).toEqual(first.body);
    expect(again.body).toMatchObject({ status: 'RECEIVED', version: 0 });
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.headers.get('Location')).toBe(`/api/intents/${first.body.id}`);
    expect(await intentCount()).toBe(1);
    const events = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox_events WHERE subject = 'evt.intent.created'`;
    expect(Number(events[0].n)).toBe(1);
  });

  it('the header and the body field are one key: a create sent with either is the same request', async () => {
    const first = await api.create(withHeader(order, 'create-2'));
    expect(first.status).toBe(201);
    const viaBody = await api.create({ ...order, idempotencyKey: 'create-2' });
    const viaBoth = await api.create(withHeader({ ...order, idempotencyKey: 'create-2' }, 'create-2'));
    for (const r of [viaBody, viaBoth]) {
      expect(r.status).toBe(201);
      expect(r.body).toEqual(first.body);
      expect(r.headers.get('Idempotent-Replayed')).toBe('true');
    }
    expect(await intentCount()).toBe(1);
  });

  it('the header and the body naming different keys: 400 naming idempotencyKey, nothing created', async () => {
    const res = await api.create(withHeader({ ...order, idempotencyKey: 'body-key' }, 'header-key'));
    expect(res.status).toBe(400);
    expect(namedFields(res)).toEqual(['idempotencyKey']);
    expect(res.body.error.message).toMatch(/Idempotency-Key header/);
    expect(await intentCount()).toBe(0);
    expect(await db().$queryRaw<unknown[]>`SELECT 1 FROM idempotency_records`).toHaveLength(0);
  });

  it('the same key with another body: 422 idempotency_key_reused, and nothing created', async () => {
    await api.create({ ...order, idempotencyKey: 'create-3' });
    const before = await dbFingerprint();
    for (const other of [
      { ...order, payload: { order: 'A-18', amount: 120 } },
      { ...order, source: 'another-service' },
    ]) {
      for (const res of [await api.create({ ...other, idempotencyKey: 'create-3' }), await api.create(withHeader(other, 'create-3'))]) {
        expect(res.status).toBe(422);
        expect(res.body.error).toMatchObject({ code: 'idempotency_key_reused', details: { idempotencyKey: 'create-3' } });
      }
    }
    expect(await dbFingerprint()).toEqual(before);
  });

  it('20 concurrent creates with one key, unforced: one intent, twenty identical answers', async () => {
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => api.create(i % 2 ? withHeader(order, 'burst') : { ...order, idempotencyKey: 'burst' })));
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(201));
    for (const r of responses) expect(r.body).toEqual(responses[0].body);
    expect(responses.filter((r) => r.headers.get('Idempotent-Replayed') === 'true')).toHaveLength(19);
    expect(await intentCount()).toBe(1);
  });

  it('repeats arriving while the first create is still at work wait for its answer: one intent, identical bodies', async () => {
    await clearOutcomes();
    const key = 'held-create';
    // 1. The first request claims the key, then its insert waits: the test holds a lock on the intents table.
    const tableHolder = await session('bridge-test:table-holder');
    await tableHolder.query('BEGIN');
    await tableHolder.query('LOCK TABLE intents IN SHARE MODE');
    const first = api.create(withHeader(order, key));
    await waitForWaiters(1, { application: 'bridge:console' });
    // 2. The repeats must meet the claimed key: the test locks the key's record, so each repeat's claim queues on it.
    const recordHolder = await session('bridge-test:record-holder');
    await recordHolder.query('BEGIN');
    const { rowCount } = await recordHolder.query(`SELECT 1 FROM idempotency_records WHERE key = $1 AND state = 'in_progress' FOR UPDATE`, [key]);
    expect(rowCount).toBe(1);
    const repeats = Array.from({ length: 6 }, (_, i) => api.create(i % 2 ? withHeader(order, key) : { ...order, idempotencyKey: key }));
    await waitForWaiters(7, { application: 'bridge:console' });
    await recordHolder.query('ROLLBACK');
    await closeSession(recordHolder);
    // 3. While the first is still at work, the key with another body is refused at once, and nothing exists yet.
    const other = await api.create({ ...order, source: 'someone-else', idempotencyKey: key });
    expect(other.status).toBe(422);
    expect(await intentCount()).toBe(0);
    // 4. The first finishes; every repeat gets its answer.
    await tableHolder.query('COMMIT');
    await closeSession(tableHolder);
    const responses = await Promise.all([first, ...repeats]);
    expect(responses.map((r) => r.status)).toEqual(Array(7).fill(201));
    for (const r of responses) expect(r.body).toEqual(responses[0].body);
    expect(await intentCount()).toBe(1);
    expect(await intentRow(responses[0].body.id)).toMatchObject({ status: 'RECEIVED', version: 0, payload: order.payload });
    expect((await persistedOutcomes())['create/idempotent_replay']).toBe(6);
  });

  it('keys belong to their caller: another caller’s identical key creates its own intent and never reads the first', async () => {
    const mine = await api.create({ ...order, idempotencyKey: 'shared-key' });
    const other = await userWithToken(['operator']);
    const response = await createRoute(apiRequest('/api/intents', { method: 'POST', token: other.token, body: order, headers: { 'Idempotency-Key': 'shared-key' } }), undefined);
    expect(response.status).toBe(201);
    const theirs = await response.json();
    expect(theirs.id).not.toBe(mine.body.id);
    expect(response.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await intentCount()).toBe(2);
  });
});

describe('the Idempotency-Key header on status changes and corrections', () => {
  it('a status change keyed by the header is replayed to a repeat keyed by the body, and the reverse', async () => {
    const intent = await makeIntent('NORMALIZED');
    const first = await api.status(intent.id, withHeader({ status: 'PROCESSED' }, 'status-h'));
    expect(first.status).toBe(200);
    const again = await api.status(intent.id, { status: 'PROCESSED', idempotencyKey: 'status-h' });
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.body.alreadyApplied).toBe(false);
    const reused = await api.status(intent.id, withHeader({ status: 'FAILED' }, 'status-h'));
    expect(reused.status).toBe(422);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: 2 });
  });

  it('a correction keyed by the header is done once', async () => {
    const intent = await makeIntent('PROCESSED');
    const body = { diff: { amount: 5 }, source: 'svc', reason: 'fix' };
    const responses = await Promise.all(Array.from({ length: 6 }, () => api.reeval(intent.id, withHeader(body, 'corr-h'))));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    for (const r of responses) expect(r.body).toEqual(responses[0].body);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'CORRECTED', version: 3 });
  });

  it('differing header and body keys are refused before anything happens, on both', async () => {
    const intent = await makeIntent('PROCESSED');
    const before = await dbFingerprint();
    const status = await api.status(intent.id, withHeader({ status: 'COMPLETED', idempotencyKey: 'a' }, 'b'));
    const reeval = await api.reeval(intent.id, withHeader({ diff: { a: 1 }, source: 's', reason: 'r', idempotencyKey: 'a' }, 'b'));
    for (const res of [status, reeval]) {
      expect(res.status).toBe(400);
      expect(namedFields(res)).toEqual(['idempotencyKey']);
    }
    expect(await dbFingerprint()).toEqual(before);
  });
});
