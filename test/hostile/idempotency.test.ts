import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apiRequest, userWithToken } from '../auth-helpers';
import { dbFingerprint, resetEngine } from '../barriers';
import { makeIntent } from '../helpers';
import { api, namedFields, signInApiCaller, type ApiResponse, type RawBody } from '../api/route-client';
import { apiRoute } from '@/lib/http/api-router';

const { POST: createRoute } = apiRoute('/api/intents');

/**
 * Hostile idempotency keys at every command that takes one (create, status, correction), in the body and in the
 * `Idempotency-Key` header: malformed keys, the two places disagreeing, a key replayed against another command or by
 * another caller. Each answer is a 4xx naming what was wrong (or, for another caller, a request of its own), and the
 * database is exactly as before.
 */
beforeAll(async () => {
  await resetEngine();
  await signInApiCaller();
});
beforeEach(resetEngine);

const header = (body: unknown, key: string): RawBody => ({ raw: JSON.stringify(body), headers: { 'Idempotency-Key': key } });

/** A door, a valid body for it, and the same body with one value changed. */
type Door = { name: string; send: (body: unknown) => Promise<ApiResponse>; body: Record<string, unknown>; changed: Record<string, unknown> };

async function doors(): Promise<Door[]> {
  const processed = await makeIntent('PROCESSED');
  return [
    { name: 'create', send: (b) => api.create(b), body: { payload: { order: 'H-1' }, source: 'hostile' }, changed: { payload: { order: 'H-2' }, source: 'hostile' } },
    { name: 'status', send: (b) => api.status(processed.id, b), body: { status: 'CORRECTED' }, changed: { status: 'CORRECTED', reason: 'another' } },
    { name: 'reeval', send: (b) => api.reeval(processed.id, b), body: { diff: { amount: 1 }, source: 'hostile', reason: 'r' }, changed: { diff: { amount: 2 }, source: 'hostile', reason: 'r' } },
  ];
}

function expectRefused(res: ApiResponse, status: number, field?: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(typeof res.body.error.message).toBe('string');
  if (field) expect(namedFields(res)).toEqual([field]);
}

describe('hostile idempotency keys', () => {
  it('malformed keys in the body: 400 naming idempotencyKey at every door, nothing changed', async () => {
    const all = await doors();
    const before = await dbFingerprint();
    const bad: unknown[] = [42, { k: 1 }, ['k'], null, true, '', 'k'.repeat(256), 'lone \ud800 surrogate', 'nul \u0000 inside'];
    for (const door of all) {
      for (const key of bad) expectRefused(await door.send({ ...door.body, idempotencyKey: key }), 400, 'idempotencyKey');
    }
    expect(await dbFingerprint()).toEqual(before);
  });

  it('malformed keys in the header: 400 naming the Idempotency-Key header, nothing changed', async () => {
    const all = await doors();
    const before = await dbFingerprint();
    for (const door of all) {
      for (const key of ['', '   ', 'k'.repeat(256)]) expectRefused(await door.send(header(door.body, key)), 400, 'Idempotency-Key');
    }
    expect(await dbFingerprint()).toEqual(before);
  });

  it('header and body disagreeing — by case, by a space, by type — is a 400 naming idempotencyKey, nothing changed', async () => {
    const all = await doors();
    const before = await dbFingerprint();
    for (const door of all) {
      for (const [inBody, inHeader] of [
        ['Key-1', 'key-1'],
        ['key-1 ', 'key-1'],
        [1, '1'],
        [null, 'key-1'],
      ] as const) {
        expectRefused(await door.send(header({ ...door.body, idempotencyKey: inBody }, inHeader)), 400, 'idempotencyKey');
      }
    }
    expect(await dbFingerprint()).toEqual(before);
  });

  it('a key replayed against another command, or with another body, is 422 and does nothing', async () => {
    const all = await doors();
    for (const door of all) expect((await door.send(header(door.body, `first-${door.name}`))).status).toBeLessThan(300);
    const before = await dbFingerprint();
    for (const door of all) {
      for (const other of all.filter((d) => d !== door)) {
        const res = await other.send({ ...other.body, idempotencyKey: `first-${door.name}` });
        expectRefused(res, 422);
        expect(res.body.error.code).toBe('idempotency_key_reused');
      }
      expectRefused(await door.send(header(door.changed, `first-${door.name}`)), 422);
    }
    expect(await dbFingerprint()).toEqual(before);
  });

  it('the same body with its fields in another order is the same request: replayed, not refused', async () => {
    const first = await api.create(header({ source: 'hostile', payload: { b: 2, a: 1 } }, 'order-insensitive'));
    const again = await api.create({ payload: { a: 1, b: 2 }, idempotencyKey: 'order-insensitive', source: 'hostile' });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
  });

  it('another caller naming someone’s key never gets their answer: without the permission 403, with it a request of its own', async () => {
    const mine = await api.create(header({ payload: { secret: 's3' }, source: 'hostile' }, 'someone-elses'));
    const before = await dbFingerprint();
    const viewer = await userWithToken(['viewer']);
    const refused = await createRoute(apiRequest('/api/intents', { method: 'POST', token: viewer.token, body: { payload: { secret: 's3' }, source: 'hostile' }, headers: { 'Idempotency-Key': 'someone-elses' } }), undefined);
    expect(refused.status).toBe(403);
    expect(await refused.text()).not.toContain(mine.body.id);
    expect(await dbFingerprint()).toEqual(before);
    const operator = await userWithToken(['operator']);
    const own = await createRoute(apiRequest('/api/intents', { method: 'POST', token: operator.token, body: { payload: { secret: 's3' }, source: 'hostile' }, headers: { 'Idempotency-Key': 'someone-elses' } }), undefined);
    expect(own.status).toBe(201);
    expect(own.headers.get('Idempotent-Replayed')).toBeNull();
    expect((await own.json()).id).not.toBe(mine.body.id);
  });
});
