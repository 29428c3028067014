import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { resetEngine } from '../barriers';
import { makeIntent, tester } from '../helpers';
import { api, signInApiCaller } from './route-client';

/**
 * The read side and creation of the JSON API: status codes, the shapes of the bodies, the envelope of
 * errors, and keyset pagination that neither skips nor repeats.
 */
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
let caller: { username: string };

beforeAll(async () => {
  await resetEngine();
  caller = await signInApiCaller();
});
beforeEach(resetEngine);

describe('POST /api/intents', () => {
  it('201 with the intent, its Location, version 0 and RECEIVED; the audit names the token’s owner', async () => {
    const res = await api.create({ payload: { order: 'B-7', lines: [{ sku: 'x', qty: 2 }] }, source: 'shop' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'RECEIVED',
      payload: { order: 'B-7', lines: [{ sku: 'x', qty: 2 }] },
      source: 'shop',
      version: 0,
      isReplay: false,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    expect(res.headers.get('location')).toBe(`/api/intents/${res.body.id}`);
    const audit = await api.audit(res.body.id);
    expect(audit.body).toEqual([expect.objectContaining({ action: 'created', actor: caller.username, toStatus: 'RECEIVED', versionAfter: 0 })]);
  });

  it('trims the source and keeps the payload as sent (nested objects, arrays, unicode, null)', async () => {
    const payload = { name: 'Zoë 東京 🚚', nested: { a: [1, { b: null }] }, flag: false, n: 1.25 };
    const res = await api.create({ payload, source: '  shop  ' });
    expect(res.status).toBe(201);
    expect(res.body.source).toBe('shop');
    expect((await api.get(res.body.id)).body.payload).toEqual(payload);
  });
});

describe('GET /api/intents', () => {
  it('200 { items, nextCursor: null }, most recently updated first', async () => {
    const a = await makeIntent('RECEIVED', { n: 'a' });
    const b = await makeIntent('RECEIVED', { n: 'b' });
    await updateIntentStatus({ id: a.id, status: 'NORMALIZED' }, tester);
    const res = await api.list();
    expect(res.status).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.items.map((i: { id: string }) => i.id)).toEqual([a.id, b.id]);
    expect(res.body.items[0]).toMatchObject({ status: 'NORMALIZED', version: 1, payload: { n: 'a' } });
  });

  it('filters by status', async () => {
    await makeIntent('RECEIVED');
    const failed = await makeIntent('FAILED');
    await makeIntent('PROCESSED');
    const res = await api.list({ status: 'FAILED' });
    expect(res.body.items.map((i: { id: string }) => i.id)).toEqual([failed.id]);
  });

  it('searches the payload text, case-insensitively, with % and _ taken literally', async () => {
    const hit = await makeIntent('RECEIVED', { note: 'Discount 50% for ACME' });
    await makeIntent('RECEIVED', { note: 'Discount 500 for others' });
    await makeIntent('RECEIVED', { note: 'nothing here' });
    expect((await api.list({ q: 'acme' })).body.items.map((i: { id: string }) => i.id)).toEqual([hit.id]);
    expect((await api.list({ q: '50%' })).body.items.map((i: { id: string }) => i.id)).toEqual([hit.id]);
    expect((await api.list({ q: 'Disc_unt' })).body.items).toHaveLength(0);
  });

  it('pages with a keyset cursor: 25 intents in pages of 10, 10, 5, each exactly once', async () => {
    for (let i = 0; i < 25; i++) await makeIntent('RECEIVED', { i });
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: { items: { id: string }[]; nextCursor: string | null } } = await api.list(cursor ? { limit: '10', cursor } : { limit: '10' });
      sizes.push(res.body.items.length);
      seen.push(...res.body.items.map((i) => i.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(sizes).toEqual([10, 10, 5]);
    expect(new Set(seen).size).toBe(25);
  });

  it('a cursor stays valid while new intents arrive: the next page continues where the last one ended', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await makeIntent('RECEIVED', { i })).id);
    const first = await api.list({ limit: '3' });
    for (let i = 0; i < 4; i++) await makeIntent('RECEIVED', { late: i });
    const next = await api.list({ limit: '3', cursor: first.body.nextCursor });
    const pages = [...first.body.items, ...next.body.items].map((i: { id: string }) => i.id);
    // The list's own order: newest change first, then the id. Two intents made in the same millisecond (times are
    // kept to the millisecond) are ordered by their random ids, not by when they were made.
    const newestFirst = await db().$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM intents WHERE id = ANY(${ids}::uuid[]) ORDER BY updated_at DESC, id DESC`;
    expect(pages).toEqual(newestFirst.map((r) => r.id));
    expect(new Set(pages)).toEqual(new Set(ids));
    expect(next.body.nextCursor).toBeNull();
  });

  it('hides replay data unless includeReplay=true', async () => {
    const mine = await makeIntent('RECEIVED');
    const replay = await createIntent({ payload: { replay: true }, source: 'replay' }, tester, { isReplay: true });
    expect((await api.list()).body.items.map((i: { id: string }) => i.id)).toEqual([mine.id]);
    expect((await api.list({ includeReplay: 'true' })).body.items.map((i: { id: string }) => i.id).sort()).toEqual([mine.id, replay.id].sort());
  });
});

describe('GET /api/intents/:id', () => {
  it('200 with the intent and its corrections, oldest first', async () => {
    const intent = await makeIntent('PROCESSED', { amount: 1 });
    for (const amount of [2, 3, 4]) await reevaluateIntent({ id: intent.id, diff: { amount }, source: 'svc', reason: `to ${amount}` }, tester);
    const res = await api.get(intent.id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: intent.id, status: 'CORRECTED', version: 5, payload: { amount: 4 } });
    expect(res.body.corrections.map((c: { diff: unknown; versionAfter: number }) => [c.diff, c.versionAfter])).toEqual([
      [{ amount: 2 }, 3],
      [{ amount: 3 }, 4],
      [{ amount: 4 }, 5],
    ]);
    expect(res.body.corrections[0]).toMatchObject({ source: 'svc', reason: 'to 2', actor: tester.name, statusBefore: 'PROCESSED', statusAfter: 'CORRECTED', metadata: null });
    // The same shapes as every other answer: ids as text, timestamps in JavaScript's ISO form.
    for (const c of res.body.corrections) {
      expect(c).toMatchObject({ id: expect.stringMatching(/^\d+$/), intentId: intent.id, correctionId: expect.any(String) });
      expect(c.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it('404 not_found in the error envelope for an unknown id (upper-case uuid too)', async () => {
    for (const id of [UNKNOWN_ID, UNKNOWN_ID.toUpperCase()]) {
      const res = await api.get(id);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: 'not_found', message: expect.stringContaining('was not found'), details: { id } } });
    }
  });

  it('takes the short id the console shows: a unique prefix of 8+ characters resolves, an ambiguous one lists candidates, a shorter one is refused', async () => {
    const intent = await makeIntent('RECEIVED', { short: true });
    for (const ref of [intent.id.slice(0, 8), intent.id.slice(0, 8).toUpperCase(), intent.id.slice(0, 13)]) {
      const res = await api.get(ref);
      expect(res.status, ref).toBe(200);
      expect(res.body).toMatchObject({ id: intent.id, payload: { short: true } });
    }
    expect((await api.audit(intent.id.slice(0, 8))).body).toEqual([expect.objectContaining({ intentId: intent.id, action: 'created' })]);

    // Two intents whose ids share their first 8 characters (ids are the database's: these two are written as such).
    const twins = ['abcdef01-0000-4000-8000-000000000001', 'abcdef01-0000-4000-8000-000000000002'];
    await db().$executeRaw`INSERT INTO intents (id, status, payload, source) SELECT unnest(${twins}::uuid[]), 'RECEIVED', '{}'::jsonb, 'twins'`;
    const ambiguous = await api.get('abcdef01');
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body).toEqual({
      error: { code: 'ambiguous_id', message: expect.stringContaining('give more of the id'), details: { fields: [{ field: 'id', message: 'matches several intents' }], candidates: twins, more: false } },
    });
    expect((await api.get('abcdef01-0000-4000-8000-00000000000')).status).toBe(400);
    expect((await api.get('abcdef01-0000-4000-8000-0000000000020')).status).toBe(400);
    expect((await api.get('abcdef01-0000-4000-8000-000000000002')).body).toMatchObject({ id: twins[1] });

    expect((await api.get('abcdef02')).status).toBe(404);
    const tooShort = await api.get('c734');
    expect(tooShort.status).toBe(400);
    expect(tooShort.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'id', message: expect.stringContaining('first 8 or more characters') }] } });
  });
});

describe('GET /api/intents/:id/audit', () => {
  it('200 with every event oldest first: created, status changes, corrections', async () => {
    const intent = await makeIntent('PROCESSED');
    await reevaluateIntent({ id: intent.id, diff: { amount: 2 }, source: 'svc', reason: 'fix' }, tester);
    await updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester);
    const res = await api.audit(intent.id);
    expect(res.status).toBe(200);
    expect(res.body.map((e: { action: string; toStatus: string; versionAfter: number }) => [e.action, e.toStatus, e.versionAfter])).toEqual([
      ['created', 'RECEIVED', 0],
      ['status_change', 'NORMALIZED', 1],
      ['status_change', 'PROCESSED', 2],
      ['correction', 'CORRECTED', 3],
      ['status_change', 'COMPLETED', 4],
    ]);
    const ats = res.body.map((e: { at: string }) => e.at);
    expect([...ats].sort()).toEqual(ats);
  });

  it('404 for an unknown intent', async () => {
    const res = await api.audit(UNKNOWN_ID);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });
});

describe('GET /api/health', () => {
  it('200 { ok: true, db: "up" }', async () => {
    const res = await api.health();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, db: 'up' });
  });
});
