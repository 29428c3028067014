import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { updateIntentStatus } from '@/lib/intents/commands';
import { correctionIdFor } from '@/lib/intents/json';
import { getIntentConflicts } from '@/lib/intents/queries';
import { dbFingerprint, holdRowLocks, persistedOutcomes, clearOutcomes, resetEngine, session, waitForWaiters } from '../barriers';
import { intentRow, makeIntent, tester } from '../helpers';
import { apiRequest, userWithToken } from '../auth-helpers';
import { api, signInApiCaller } from './route-client';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '@/lib/openapi/document';
import { apiRoute } from '@/lib/http/api-router';

const { POST: statusRoute } = apiRoute('/api/intents/{id}/status');

/**
 * The JSON API's commands: status, re-evaluation and bulk status through their route handlers, with the
 * status codes and error codes the table lists — 404, 409 invalid_transition / version_conflict, 422
 * idempotency_key_reused, 423 lock_timeout — and idempotency keys repeated one after another and concurrently.
 */
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
let caller: { username: string };

beforeAll(async () => {
  await resetEngine();
  caller = await signInApiCaller();
});
beforeEach(resetEngine);

/** The OpenAPI document's schema of one error answer, compiled against its components. */
function documentedErrorValidator(path: string, method: string, status: number) {
  const doc = openApiDocument() as unknown as { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: object }> }> }>>; components: object };
  const schema = doc.paths[path][method].responses[String(status)].content['application/json'].schema;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule)(ajv);
  return ajv.compile({ ...schema, components: doc.components });
}

async function count(table: 'conflict_events' | 'corrections'): Promise<number> {
  const rows =
    table === 'corrections'
      ? await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM corrections`
      : await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM conflict_events`;
  return Number(rows[0].n);
}

describe('POST /api/intents/:id/status', () => {
  it('200 { intent, alreadyApplied: false }, then the same request again is { alreadyApplied: true } and changes nothing', async () => {
    const intent = await makeIntent('NORMALIZED');
    const res = await api.status(intent.id, { status: 'PROCESSED' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['alreadyApplied', 'intent']);
    expect(res.body).toMatchObject({ alreadyApplied: false, intent: { id: intent.id, status: 'PROCESSED', version: 2 } });
    const again = await api.status(intent.id, { status: 'PROCESSED' });
    expect(again.body).toMatchObject({ alreadyApplied: true, intent: { status: 'PROCESSED', version: 2 } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: 2 });
  });

  it('409 invalid_transition naming the allowed next steps; nothing changes but the audit row of the refusal', async () => {
    const intent = await makeIntent('RECEIVED');
    const before = await dbFingerprint();
    const res = await api.status(intent.id, { status: 'COMPLETED' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'invalid_transition', details: { intentId: intent.id, from: 'RECEIVED', to: 'COMPLETED', allowed: ['NORMALIZED', 'FAILED'] } });
    expect(res.body.error.message).toMatch(/RECEIVED.*COMPLETED/);
    expect(await dbFingerprint()).toEqual({ ...before, audit_events: Number(before.audit_events) + 1 });
  });

  it('409 version_conflict for a stale expectedVersion: nothing applied, one conflict event persisted with the caller as actor', async () => {
    const intent = await makeIntent('NORMALIZED');
    await updateIntentStatus({ id: intent.id, status: 'PROCESSED' }, tester);
    const res = await api.status(intent.id, { status: 'FAILED', expectedVersion: 1 });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'version_conflict', details: { intentId: intent.id, expectedVersion: 1, currentVersion: 2 } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: 2 });
    expect(await getIntentConflicts(intent.id)).toEqual([
      expect.objectContaining({ intentId: intent.id, operation: 'update_status', expectedVersion: 1, currentVersion: 2, actor: caller.username, reason: expect.stringContaining('expected version 1') }),
    ]);
  });

  it('the right expectedVersion applies', async () => {
    const intent = await makeIntent('NORMALIZED');
    const res = await api.status(intent.id, { status: 'PROCESSED', expectedVersion: 1 });
    expect(res.body).toMatchObject({ alreadyApplied: false, intent: { version: 2 } });
  });

  it('404 not_found for an unknown intent, nothing written', async () => {
    await makeIntent();
    const before = await dbFingerprint();
    const res = await api.status(UNKNOWN_ID, { status: 'NORMALIZED' });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect(await dbFingerprint()).toEqual(before);
  });

  it('423 lock_timeout at once with nowait while another transaction holds the row, naming it', async () => {
    const intent = await makeIntent('NORMALIZED');
    const holder = await holdRowLocks([intent.id], `bridge:pipeline_execute:${intent.id}`);
    const before = await dbFingerprint();
    const res = await api.status(intent.id, { status: 'PROCESSED', nowait: true });
    await holder.release();
    expect(res.status).toBe(423);
    expect(res.body.error).toMatchObject({ code: 'lock_timeout', details: { intentIds: [intent.id], nowait: true, holders: [{ pid: holder.session.pid, applicationName: `bridge:pipeline_execute:${intent.id}` }] } });
    // The holder, and the Locks page with it selected.
    expect(res.body.error.details).toMatchObject({ holderPid: holder.session.pid, locksPage: `/locks?pid=${holder.session.pid}` });
    expect(await dbFingerprint()).toEqual(before);
    // The document says exactly this of a 423.
    const validate = documentedErrorValidator('/api/intents/{id}/status', 'post', 423);
    expect(validate(res.body), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ error: { ...res.body.error, details: { ...res.body.error.details, locksPage: undefined } } })).toBe(false);
  });
});

describe('POST /api/intents/:id/reeval', () => {
  it('200 with exactly { intentId, status, version, correctionId, correctionCount, alreadyApplied, retries }', async () => {
    const intent = await makeIntent('PROCESSED', { amount: 10, customer: { name: 'Ann' } });
    const res = await api.reeval(intent.id, { diff: { amount: 12, customer: { tier: 'gold' } }, source: 'svc', reason: 'price fix', metadata: { ticket: 'T-1' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      intentId: intent.id,
      status: 'CORRECTED',
      version: 3,
      correctionId: correctionIdFor(intent.id, { amount: 12, customer: { tier: 'gold' } }),
      correctionCount: 1,
      alreadyApplied: false,
      retries: 0,
    });
    expect((await intentRow(intent.id)).payload).toEqual({ amount: 12, customer: { name: 'Ann', tier: 'gold' } });
    const [correction] = (await api.get(intent.id)).body.corrections;
    expect(correction).toMatchObject({ actor: caller.username, source: 'svc', reason: 'price fix', metadata: { ticket: 'T-1' } });
  });

  it('the same correction again (keys reordered, another reason) is alreadyApplied with the same id and version', async () => {
    const intent = await makeIntent('PROCESSED');
    const first = await api.reeval(intent.id, { diff: { a: 1, b: 2 }, source: 'svc', reason: 'one' });
    const again = await api.reeval(intent.id, { diff: { b: 2, a: 1 }, source: 'other-svc', reason: 'two' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body, alreadyApplied: true });
    expect(await count('corrections')).toBe(1);
  });

  it.each(['COMPLETED', 'FAILED'] as const)('409 invalid_transition on a %s intent, nothing applied', async (status) => {
    const intent = await makeIntent(status);
    const before = await dbFingerprint();
    const res = await api.reeval(intent.id, { diff: { a: 1 }, source: 'svc', reason: 'late' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'invalid_transition', details: { intentId: intent.id, from: status } });
    expect(await dbFingerprint()).toEqual(before);
  });

  it('409 version_conflict for a stale expectedVersion: no correction, one conflict event', async () => {
    const intent = await makeIntent('PROCESSED');
    await api.reeval(intent.id, { diff: { a: 1 }, source: 'svc', reason: 'first reviewer' });
    const res = await api.reeval(intent.id, { diff: { a: 2 }, source: 'svc', reason: 'second reviewer', expectedVersion: 2 });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'version_conflict', details: { intentId: intent.id, expectedVersion: 2, currentVersion: 3 } });
    expect((await intentRow(intent.id)).payload).toMatchObject({ a: 1 });
    expect(await count('corrections')).toBe(1);
    expect(await getIntentConflicts(intent.id)).toEqual([expect.objectContaining({ operation: 'reevaluate', expectedVersion: 2, currentVersion: 3, actor: caller.username })]);
  });

  it('404 not_found for an unknown intent', async () => {
    const res = await api.reeval(UNKNOWN_ID, { diff: { a: 1 }, source: 'svc', reason: 'x' });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });
});

describe('POST /api/intents/bulk-status', () => {
  it('200 { intents }: every intent moved one version, whatever order the ids came in, with one audit event each', async () => {
    const intents = await Promise.all([makeIntent('NORMALIZED'), makeIntent('PROCESSED'), makeIntent('CORRECTED')]);
    const res = await api.bulk({ ids: intents.map((i) => i.id).reverse(), status: 'FAILED' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['intents']);
    const byId = new Map(res.body.intents.map((i: { id: string }) => [i.id, i]));
    for (const intent of intents) expect(byId.get(intent.id)).toMatchObject({ status: 'FAILED', version: intent.version + 1 });
    const events = await db().$queryRaw<{ actor: string; details: { batchSize: number } }[]>`
      SELECT actor, details FROM audit_events WHERE action = 'bulk_status_change'`;
    expect(events).toHaveLength(3);
    expect(events.every((e) => e.actor === caller.username && e.details.batchSize === 3)).toBe(true);
  });

  it('an id named twice, in another case, and an intent already there: each intent changes at most once', async () => {
    const moving = await makeIntent('RECEIVED');
    const there = await makeIntent('FAILED');
    const res = await api.bulk({ ids: [moving.id, moving.id.toUpperCase(), there.id], status: 'FAILED' });
    expect(res.status).toBe(200);
    expect(res.body.intents).toHaveLength(2);
    expect(await intentRow(moving.id)).toMatchObject({ status: 'FAILED', version: 1 });
    expect(await intentRow(there.id)).toMatchObject({ status: 'FAILED', version: there.version });
  });

  it('409 invalid_transition when any intent cannot move, listing each: all or nothing', async () => {
    const ok = await makeIntent('PROCESSED');
    const done = await makeIntent('COMPLETED');
    const before = await dbFingerprint();
    const res = await api.bulk({ ids: [ok.id, done.id], status: 'FAILED' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'invalid_transition', details: { to: 'FAILED', intents: [{ intentId: done.id, from: 'COMPLETED', allowed: [] }] } });
    // Only the refusal's own audit row, on the intent that stopped the change.
    expect(await dbFingerprint()).toEqual({ ...before, audit_events: Number(before.audit_events) + 1 });
  });

  it('404 not_found listing the missing ids: all or nothing', async () => {
    const ok = await makeIntent('PROCESSED');
    const before = await dbFingerprint();
    const res = await api.bulk({ ids: [ok.id, UNKNOWN_ID], status: 'FAILED' });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'not_found', details: { missing: [UNKNOWN_ID] } });
    expect(await dbFingerprint()).toEqual(before);
  });
});

describe('idempotency keys through the API', () => {
  it('a repeat returns the first response byte for byte and does the work once', async () => {
    const intent = await makeIntent('NORMALIZED');
    const body = { status: 'PROCESSED', idempotencyKey: 'order-42-process' };
    const first = await api.status(intent.id, body);
    await updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester); // the intent moves on meanwhile
    const repeat = await api.status(intent.id, body);
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(first.body);
    expect(repeat.body.intent).toMatchObject({ status: 'PROCESSED', version: 2 });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'COMPLETED', version: 3 });
    // The repeat says it is a replay of the first answer (which is why it can show a version that has moved on).
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
  });

  it('keys belong to their caller: another caller’s identical key is another key, and reads nobody’s answer', async () => {
    const [a, b] = [await makeIntent('NORMALIZED'), await makeIntent('NORMALIZED')];
    await api.status(a.id, { status: 'PROCESSED', idempotencyKey: 'everyones-favourite' });
    const [other, third] = [await userWithToken(['operator']), await userWithToken(['operator'])];
    const call = async (caller: { token: string }, id: string) => {
      const res = await statusRoute(apiRequest(`/api/intents/${id}/status`, { method: 'POST', token: caller.token, body: { status: 'PROCESSED', idempotencyKey: 'everyones-favourite' } }), {
        params: Promise.resolve({ id }),
      });
      return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: await res.json() };
    };
    // Same key and body as the first caller's: this caller's own work (already applied), not the first caller's answer.
    expect(await call(other, a.id)).toMatchObject({ status: 200, replayed: null, body: { alreadyApplied: true } });
    // The first caller's key with another body is a first use for a third caller: done, not 422…
    expect(await call(third, b.id)).toMatchObject({ status: 200, replayed: null, body: { alreadyApplied: false, intent: { id: b.id, status: 'PROCESSED' } } });
    // …and that caller's repeat is its own replay.
    expect((await call(third, b.id)).replayed).toBe('true');
    expect((await api.status(b.id, { status: 'PROCESSED', idempotencyKey: 'everyones-favourite' })).status).toBe(422);
  });

  it('the same key with another body: 422 idempotency_key_reused, nothing done', async () => {
    const intent = await makeIntent('NORMALIZED');
    await api.status(intent.id, { status: 'PROCESSED', idempotencyKey: 'k-1' });
    const before = await dbFingerprint();
    const res = await api.status(intent.id, { status: 'FAILED', idempotencyKey: 'k-1' });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'idempotency_key_reused', details: { idempotencyKey: 'k-1' } });
    expect(await dbFingerprint()).toEqual(before);
  });

  it('the same key on another intent or another operation is a different body: 422', async () => {
    const [a, b] = [await makeIntent('PROCESSED'), await makeIntent('PROCESSED')];
    await api.status(a.id, { status: 'COMPLETED', idempotencyKey: 'shared' });
    expect((await api.status(b.id, { status: 'COMPLETED', idempotencyKey: 'shared' })).status).toBe(422);
    expect((await api.reeval(a.id, { diff: { x: 1 }, source: 's', reason: 'r', idempotencyKey: 'shared' })).status).toBe(422);
    expect(await intentRow(b.id)).toMatchObject({ status: 'PROCESSED', version: b.version });
  });

  it('a correction repeated with its key: same answer (not "already applied"), one correction row', async () => {
    const intent = await makeIntent('PROCESSED');
    const body = { diff: { amount: 5 }, source: 'svc', reason: 'fix', idempotencyKey: 'corr-1' };
    const first = await api.reeval(intent.id, body);
    const repeat = await api.reeval(intent.id, body);
    expect(repeat.body).toEqual(first.body);
    expect(repeat.body.alreadyApplied).toBe(false);
    expect(await count('corrections')).toBe(1);
    expect((await api.reeval(intent.id, { ...body, reason: 'another reason' })).status).toBe(422);
  });

  it('a refusal is replayed too: the repeat of a version conflict is the same 409 and persists no second conflict event', async () => {
    const intent = await makeIntent('PROCESSED');
    const body = { status: 'COMPLETED', expectedVersion: 0, idempotencyKey: 'stale-1' };
    const first = await api.status(intent.id, body);
    expect(first.status).toBe(409);
    const repeat = await api.status(intent.id, body);
    expect(repeat.status).toBe(409);
    expect(repeat.body).toEqual(first.body);
    expect(await count('conflict_events')).toBe(1);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
  });

  it('an invalid transition is replayed as such even after the intent could make the move: the work is not redone', async () => {
    const intent = await makeIntent('NORMALIZED');
    const body = { status: 'COMPLETED', idempotencyKey: 'early' };
    expect((await api.status(intent.id, body)).status).toBe(409);
    await updateIntentStatus({ id: intent.id, status: 'PROCESSED' }, tester);
    const repeat = await api.status(intent.id, body);
    expect(repeat.status).toBe(409);
    expect(repeat.body.error.code).toBe('invalid_transition');
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED' });
  });

  it('a lock timeout is not kept: the repeat after the lock is gone does the work', async () => {
    const intent = await makeIntent('NORMALIZED');
    const body = { status: 'PROCESSED', nowait: true, idempotencyKey: 'retry-me' };
    const holder = await holdRowLocks([intent.id]);
    expect((await api.status(intent.id, body)).status).toBe(423);
    await holder.release();
    const retry = await api.status(intent.id, body);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ alreadyApplied: false, intent: { version: 2 } });
  });

  it('concurrent repeats that arrive while the first is still at work wait for its answer: one increment, identical bodies', async () => {
    const intent = await makeIntent('NORMALIZED');
    await clearOutcomes();
    const key = 'concurrent-42';
    const body = { status: 'PROCESSED', idempotencyKey: key };
    // 1. The first request claims the key and then waits for the row, which the test holds.
    const rowHolder = await holdRowLocks([intent.id]);
    const first = api.status(intent.id, body);
    await waitForWaiters(1, { application: `bridge:update_status:${intent.id}` });
    // 2. The repeats must meet the claimed key: the test locks the key's record, so each repeat's claim queues on it.
    const recordHolder = await session('bridge-test:record-holder');
    await recordHolder.query('BEGIN');
    const { rowCount } = await recordHolder.query(`SELECT 1 FROM idempotency_records WHERE key = $1 AND state = 'in_progress' FOR UPDATE`, [key]);
    expect(rowCount).toBe(1);
    const repeats = Array.from({ length: 8 }, () => api.status(intent.id, body));
    await waitForWaiters(8, { application: 'bridge:console' });
    await recordHolder.query('ROLLBACK');
    // 3. While the first is still at work, the same key with another body is refused at once.
    const other = await api.status(intent.id, { status: 'FAILED', idempotencyKey: key });
    expect(other.status).toBe(422);
    // 4. The first finishes; every repeat gets its answer.
    await rowHolder.release();
    const responses = await Promise.all([first, ...repeats]);
    expect(responses.every((r) => r.status === 200)).toBe(true);
    for (const r of responses) expect(r.body).toEqual(responses[0].body);
    expect(responses[0].body).toMatchObject({ alreadyApplied: false, intent: { status: 'PROCESSED', version: 2 } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: 2 });
    const changes = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM audit_events WHERE intent_id = ${intent.id}::uuid AND action = 'status_change' AND to_status = 'PROCESSED'`;
    expect(Number(changes[0].n)).toBe(1);
    expect((await persistedOutcomes())['update_status/idempotent_replay']).toBe(8);
  });

  it('20 concurrent identical corrections under one key, unforced: one correction, twenty identical answers', async () => {
    const intent = await makeIntent('PROCESSED');
    const body = { diff: { amount: 7 }, source: 'svc', reason: 'fix', idempotencyKey: 'corr-burst' };
    const responses = await Promise.all(Array.from({ length: 20 }, () => api.reeval(intent.id, body)));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    for (const r of responses) expect(r.body).toEqual(responses[0].body);
    expect(responses[0].body).toMatchObject({ alreadyApplied: false, version: 3, correctionCount: 1 });
    expect(await count('corrections')).toBe(1);
    expect(await intentRow(intent.id)).toMatchObject({ version: 3 });
  });

  it('the key is kept at least 24 hours', async () => {
    const intent = await makeIntent('NORMALIZED');
    await api.status(intent.id, { status: 'PROCESSED', idempotencyKey: 'kept' });
    const [row] = await db().$queryRaw<{ hours: number; state: string }[]>`
      SELECT extract(epoch FROM expires_at - created_at) / 3600 AS hours, state FROM idempotency_records WHERE key = 'kept'`;
    expect(row.state).toBe('completed');
    expect(Number(row.hours)).toBeGreaterThanOrEqual(24);
  });
});

describe('an intent id written in upper case is the same intent (UUIDs are case-insensitive)', () => {
  it('the same correction sent once with each spelling is applied once', async () => {
    const intent = await makeIntent('PROCESSED');
    const body = { diff: { amount: 3 }, source: 'svc', reason: 'fix' };
    const lower = await api.reeval(intent.id, body);
    const upper = await api.reeval(intent.id.toUpperCase(), body);
    expect(upper.status).toBe(200);
    expect(upper.body).toEqual({ ...lower.body, alreadyApplied: true });
    expect(upper.body.intentId).toBe(intent.id);
    expect(await count('corrections')).toBe(1);
    expect(await intentRow(intent.id)).toMatchObject({ version: 3 });
  });

  it('an idempotency key repeated with the other spelling is the same request, not a reused key', async () => {
    const intent = await makeIntent('NORMALIZED');
    const first = await api.status(intent.id, { status: 'PROCESSED', idempotencyKey: 'case-1' });
    const repeat = await api.status(intent.id.toUpperCase(), { status: 'PROCESSED', idempotencyKey: 'case-1' });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(first.body);
  });

  it('a lock error for an upper-case id still names the holder labelled with the intent', async () => {
    const intent = await makeIntent('NORMALIZED');
    const holder = await holdRowLocks([intent.id], `bridge:pipeline_execute:${intent.id}`);
    const res = await api.status(intent.id.toUpperCase(), { status: 'PROCESSED', nowait: true });
    await holder.release();
    expect(res.status).toBe(423);
    expect(res.body.error.details).toMatchObject({ intentIds: [intent.id], holders: [{ pid: holder.session.pid }] });
  });
});
