import { beforeAll, describe, expect, it } from 'vitest';
import { dbFingerprint, resetEngine } from '../barriers';
import { intentRow, makeIntent } from '../helpers';
import { api, namedFields, type ApiResponse } from './route-client';
import { signInApiCaller } from './route-client';

/**
 * The API's promise: "Bad input never reaches the database: it gets a 400 naming the field, and nothing changes."
 * Every endpoint, every kind of bad input: a 400 with code invalid_request, the field in
 * `error.details.fields[].field` and in the message, and the database exactly as it was (row counts of every engine
 * table and a digest of every intent's status, version, payload and updated_at).
 */
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
let processed: string;
let second: string;

// Refused requests change nothing (each case checks that), so the intents are made once for the whole file; the
// few cases that are accepted work on intents of their own.
beforeAll(async () => {
  await resetEngine();
  await signInApiCaller();
  processed = (await makeIntent('PROCESSED')).id;
  second = (await makeIntent('NORMALIZED')).id;
});

async function expectRefused(call: () => Promise<ApiResponse>, field: string) {
  const before = await dbFingerprint();
  const res = await call();
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.code).toBe('invalid_request');
  expect(namedFields(res)).toContain(field);
  expect(res.body.error.message).toContain(field);
  expect(await dbFingerprint()).toEqual(before);
}

const json = (raw: string | undefined, contentType = 'application/json') => ({ raw, headers: { 'content-type': contentType } });
const longText = (n: number) => 'x'.repeat(n);

describe('POST /api/intents', () => {
  const valid = { payload: { order: 'B-1' }, source: 'svc' };
  it.each([
    ['no body', { raw: undefined }, 'body'],
    ['malformed JSON', json('{"payload": {'), 'body'],
    ['a form instead of JSON', json('payload=1', 'application/x-www-form-urlencoded'), 'body'],
    ['a JSON array', [valid], 'body'],
    ['a JSON string', 'just text', 'body'],
    ['payload missing', { source: 'svc' }, 'payload'],
    ['payload an array', { ...valid, payload: [1, 2] }, 'payload'],
    ['payload a string', { ...valid, payload: 'order B-1' }, 'payload'],
    ['payload null', { ...valid, payload: null }, 'payload'],
    ['source missing', { payload: valid.payload }, 'source'],
    ['source empty', { ...valid, source: '   ' }, 'source'],
    ['source a number', { ...valid, source: 42 }, 'source'],
    ['source too long', { ...valid, source: longText(256) }, 'source'],
    ['an unknown field', { ...valid, status: 'COMPLETED' }, 'status'],
  ])('%s → 400 naming %s', async (_, body, field) => {
    await expectRefused(() => api.create(body), field);
  });

  it('names every bad field at once', async () => {
    const res = await api.create({ payload: 'x', source: '', extra: 1 });
    expect(res.status).toBe(400);
    expect(namedFields(res).sort()).toEqual(['extra', 'payload', 'source']);
    expect(res.body.error.details.fields.find((f: { field: string }) => f.field === 'extra').message).toBe('is not a known field');
  });

  it('says a missing field "is required"', async () => {
    const res = await api.create({});
    expect(res.body.error.details.fields).toEqual(
      expect.arrayContaining([
        { field: 'payload', message: 'is required' },
        { field: 'source', message: 'is required' },
      ]),
    );
  });
});

describe('GET /api/intents', () => {
  it.each([
    ['an unknown status', { status: 'DONE' }, 'status'],
    ['limit 0', { limit: '0' }, 'limit'],
    ['limit above 200', { limit: '201' }, 'limit'],
    ['limit not a number', { limit: 'ten' }, 'limit'],
    ['limit not whole', { limit: '2.5' }, 'limit'],
    ['a cursor it never issued', { cursor: 'bm90LWEtY3Vyc29y' }, 'cursor'],
    ['a cursor with a bad id inside', { cursor: Buffer.from(JSON.stringify({ u: new Date().toISOString(), i: 'x' })).toString('base64url') }, 'cursor'],
    ['q too long', { q: longText(201) }, 'q'],
    ['includeReplay not a boolean', { includeReplay: 'yes' }, 'includeReplay'],
    ['an unknown parameter', { sort: 'id' }, 'sort'],
  ])('%s → 400 naming %s', async (_, query, field) => {
    await expectRefused(() => api.list(query), field);
  });
});

describe('GET /api/intents/:id and /audit', () => {
  it.each(['not-a-uuid', '123', "1' OR '1'='1"])('id %j → 400 naming id', async (id) => {
    await expectRefused(() => api.get(id), 'id');
    await expectRefused(() => api.audit(id), 'id');
  });
});

describe('POST /api/intents/:id/status', () => {
  it.each([
    ['no body', { raw: undefined }, 'body'],
    ['malformed JSON', json('{"status":'), 'body'],
    ['text/plain', json('{"status":"COMPLETED"}', 'text/plain'), 'body'],
    ['a JSON array', ['COMPLETED'], 'body'],
    ['status missing', {}, 'status'],
    ['an unknown status', { status: 'DONE' }, 'status'],
    ['status in lower case', { status: 'completed' }, 'status'],
    ['expectedVersion negative', { status: 'COMPLETED', expectedVersion: -1 }, 'expectedVersion'],
    ['expectedVersion fractional', { status: 'COMPLETED', expectedVersion: 1.5 }, 'expectedVersion'],
    ['expectedVersion a string', { status: 'COMPLETED', expectedVersion: '2' }, 'expectedVersion'],
    ['expectedVersion beyond a Postgres integer', { status: 'COMPLETED', expectedVersion: 2 ** 31 }, 'expectedVersion'],
    ['idempotencyKey empty', { status: 'COMPLETED', idempotencyKey: '' }, 'idempotencyKey'],
    ['idempotencyKey of 256 characters', { status: 'COMPLETED', idempotencyKey: longText(256) }, 'idempotencyKey'],
    ['idempotencyKey a number', { status: 'COMPLETED', idempotencyKey: 7 }, 'idempotencyKey'],
    ['nowait a string', { status: 'COMPLETED', nowait: 'yes' }, 'nowait'],
    ['an unknown field', { status: 'COMPLETED', actor: 'someone-else' }, 'actor'],
  ])('%s → 400 naming %s', async (_, body, field) => {
    await expectRefused(() => api.status(processed, body), field);
  });

  it('a malformed id with a valid body → 400 naming id', async () => {
    await expectRefused(() => api.status('nope', { status: 'COMPLETED' }), 'id');
  });

  it('accepts expectedVersion 2147483647, the largest Postgres integer: a version conflict, recorded, not a 500', async () => {
    const own = (await makeIntent('PROCESSED')).id;
    const res = await api.status(own, { status: 'COMPLETED', expectedVersion: 2 ** 31 - 1 });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'version_conflict', details: { expectedVersion: 2 ** 31 - 1, currentVersion: 2 } });
  });

  it('a missing status "is required", like every other missing field, in one message shape', async () => {
    const res = await api.status(processed, { expectedVersion: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields).toEqual([
      { field: 'status', message: 'is required' },
      expect.objectContaining({ field: 'expectedVersion' }),
    ]);
    expect(res.body.error.message).toMatch(/^Invalid request: status is required; expectedVersion .+\.$/);
    const one = await api.status(processed, {});
    expect(one.body.error.message).toBe('Invalid request: status is required.');
  });

  it('a version the intent has not reached yet is a conflict that says so, not "someone changed it first"', async () => {
    const own = (await makeIntent('PROCESSED')).id;
    const ahead = await api.status(own, { status: 'COMPLETED', expectedVersion: 7 });
    expect(ahead.status).toBe(409);
    expect(ahead.body.error.message).toContain('does not exist yet');
    expect(ahead.body.error.message).not.toContain('someone changed it first');
    const behind = await api.status(own, { status: 'COMPLETED', expectedVersion: 1 });
    expect(behind.body.error.message).toContain('someone changed it first');
  });

  it('accepts an idempotencyKey of exactly 255 characters (the boundary)', async () => {
    const own = (await makeIntent('PROCESSED')).id;
    const res = await api.status(own, { status: 'COMPLETED', idempotencyKey: longText(255) });
    expect(res.status).toBe(200);
  });
});

describe('POST /api/intents/:id/reeval', () => {
  const valid = { diff: { amount: 12 }, source: 'svc', reason: 'fix' };
  it.each([
    ['no body', { raw: undefined }, 'body'],
    ['malformed JSON', json('{"diff": {"a": 1}'), 'body'],
    ['a JSON number', 3, 'body'],
    ['diff missing', { source: 'svc', reason: 'fix' }, 'diff'],
    ['diff empty', { ...valid, diff: {} }, 'diff'],
    ['diff an array', { ...valid, diff: [{ amount: 12 }] }, 'diff'],
    ['diff null', { ...valid, diff: null }, 'diff'],
    ['source missing', { diff: valid.diff, reason: 'fix' }, 'source'],
    ['source too long', { ...valid, source: longText(256) }, 'source'],
    ['reason empty', { ...valid, reason: '' }, 'reason'],
    ['reason only spaces', { ...valid, reason: '   ' }, 'reason'],
    ['reason too long', { ...valid, reason: longText(2001) }, 'reason'],
    ['metadata an array', { ...valid, metadata: ['t'] }, 'metadata'],
    ['expectedVersion a string', { ...valid, expectedVersion: 'two' }, 'expectedVersion'],
    ['expectedVersion beyond a Postgres integer', { ...valid, expectedVersion: 3_000_000_000 }, 'expectedVersion'],
    ['idempotencyKey too long', { ...valid, idempotencyKey: longText(256) }, 'idempotencyKey'],
    ['an unknown field', { ...valid, status: 'COMPLETED' }, 'status'],
  ])('%s → 400 naming %s', async (_, body, field) => {
    await expectRefused(() => api.reeval(processed, body), field);
  });

  it('a malformed id with a valid body → 400 naming id', async () => {
    await expectRefused(() => api.reeval('42', valid), 'id');
  });
});

describe('POST /api/intents/bulk-status', () => {
  it.each([
    ['no body', () => ({ raw: undefined }), 'body'],
    ['malformed JSON', () => json('{"ids": ['), 'body'],
    ['ids missing', () => ({ status: 'FAILED' }), 'ids'],
    ['ids empty', () => ({ ids: [], status: 'FAILED' }), 'ids'],
    ['ids a string', () => ({ ids: processed, status: 'FAILED' }), 'ids'],
    ['an id that is not a uuid', () => ({ ids: [processed, 'nope'], status: 'FAILED' }), 'ids.1'],
    ['more than 1000 ids', () => ({ ids: Array.from({ length: 1001 }, () => UNKNOWN_ID), status: 'FAILED' }), 'ids'],
    ['status missing', () => ({ ids: [processed] }), 'status'],
    ['an unknown status', () => ({ ids: [processed], status: 'ARCHIVED' }), 'status'],
    ['an unknown field', () => ({ ids: [processed], status: 'FAILED', nowait: true }), 'nowait'],
  ])('%s → 400 naming %s', async (_, body, field) => {
    await expectRefused(() => api.bulk(body()), field);
  });

  it('after all those refusals the shared intents are untouched and still movable', async () => {
    expect(await intentRow(processed)).toMatchObject({ status: 'PROCESSED', version: 2 });
    expect(await intentRow(second)).toMatchObject({ status: 'NORMALIZED', version: 1 });
    const res = await api.bulk({ ids: [processed, second], status: 'FAILED' });
    expect(res.status).toBe(200);
    expect(res.body.intents.map((i: { status: string }) => i.status)).toEqual(['FAILED', 'FAILED']);
  });
});
