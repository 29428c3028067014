import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { apiRoute } from '@/lib/http/api-router';
import { OPERATIONS } from '@/lib/openapi/operations';
import { updateIntentStatus } from '@/lib/intents/commands';
import { SUBJECTS } from '@/lib/events/subjects';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { resetEngine } from '../barriers';
import { makeIntent, tester } from '../helpers';

/**
 * GET /api/console/events/recent, the Events page's browser: the outbox newest first, by type and by published or
 * waiting, in keyset pages that neither skip nor repeat while new events arrive; the Events page's permission; bad
 * query input answered 400 naming the field.
 */
const { GET: recentRoute } = apiRoute('/api/console/events/recent');
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

type Item = { id: string; eventId: string; type: string; orderingKey: string; intentId: string | null; createdAt: string; publishedAt: string | null; streamSeq: number | null; payload: Record<string, unknown> };
type Page = { items: Item[]; nextCursor: string | null };

let viewer: string;
let noRoles: string;

beforeAll(async () => {
  await resetAuth();
  viewer = (await userWithToken(['viewer'])).token;
  // Every role reads intents, so only a user left with no role at all (roles emptied in the database: no form
  // allows it) is refused.
  const stripped = await userWithToken(['viewer']);
  await db().$executeRaw`UPDATE users SET roles = '{}' WHERE id = ${stripped.user.id}::uuid`;
  noRoles = stripped.token;
});
beforeEach(resetEngine);

async function recent(query: Record<string, string> = {}, token: string | null = viewer) {
  const qs = new URLSearchParams(query).toString();
  const response = await recentRoute(apiRequest(`/api/console/events/recent${qs ? `?${qs}` : ''}`, { token: token ?? undefined }), undefined);
  return { status: response.status, body: await response.json() };
}

/** The outbox as written, newest first: what the route must answer. */
async function outboxIds(where: 'all' | 'waiting' | 'published' = 'all'): Promise<string[]> {
  const rows = await db().$queryRaw<{ id: bigint; published: boolean }[]>`SELECT id, published_at IS NOT NULL AS published FROM outbox_events ORDER BY id DESC`;
  return rows.filter((r) => where === 'all' || r.published === (where === 'published')).map((r) => String(r.id));
}

/** What a relay does once JetStream acknowledged the oldest `count` events: marks them with their stream sequence. */
async function publishOldest(count: number) {
  await db().$executeRaw`
    UPDATE outbox_events SET published_at = now(), stream_seq = 1000 + id
    WHERE id IN (SELECT id FROM outbox_events ORDER BY id LIMIT ${count})`;
}

/** Every page from the first, following nextCursor. */
async function walk(query: Record<string, string>): Promise<Item[][]> {
  const pages: Item[][] = [];
  let cursor: string | null = null;
  do {
    const res = await recent(cursor ? { ...query, cursor } : query);
    expect(res.status).toBe(200);
    pages.push((res.body as Page).items);
    cursor = (res.body as Page).nextCursor;
  } while (cursor && pages.length < 50);
  return pages;
}

describe('GET /api/console/events/recent', () => {
  it('answers the newest events first, each with its intent, times, state and the message as published', async () => {
    const first = await makeIntent('RECEIVED');
    const second = await makeIntent('NORMALIZED');
    await db().$executeRaw`SELECT bridge_outbox_emit('evt.lock.acquired', 'report:2026-11', 'svc-a', '{"resourceId":"report:2026-11","ownerId":"svc-a","expiresAt":"2026-11-27T10:00:00Z"}'::jsonb, NULL, 7)`;
    await publishOldest(1);

    const res = await recent();
    expect(res.status).toBe(200);
    const { items, nextCursor } = res.body as Page;
    expect(nextCursor).toBeNull();
    expect(items.map((e) => e.id)).toEqual(await outboxIds());
    expect(items.map((e) => e.type)).toEqual([SUBJECTS.lockAcquired, SUBJECTS.statusChanged, SUBJECTS.intentCreated, SUBJECTS.intentCreated]);

    const [lock, moved, , created] = items;
    expect(lock).toMatchObject({ intentId: null, orderingKey: 'report:2026-11', publishedAt: null, streamSeq: null });
    expect(moved).toMatchObject({ intentId: second.id, orderingKey: second.id, publishedAt: null, streamSeq: null });
    expect(Object.keys(moved.payload)).toEqual(['specVersion', 'id', 'type', 'occurredAt', 'intentId', 'version', 'actor', 'data']);
    expect(moved.payload).toMatchObject({ specVersion: 1, id: moved.eventId, type: SUBJECTS.statusChanged, intentId: second.id, version: 1, data: { from: 'RECEIVED', to: 'NORMALIZED' } });
    // The oldest went out: its acknowledgement time and JetStream's sequence come with it.
    expect(created).toMatchObject({ intentId: first.id, publishedAt: expect.stringMatching(ISO), streamSeq: 1000 + Number(created.id) });
    expect(created.createdAt).toMatch(ISO);
    expect(created.payload).toMatchObject({ id: created.eventId, type: SUBJECTS.intentCreated, data: { status: 'RECEIVED', source: 'test' } });
  });

  it('keeps one type, only the published or only the waiting events, and both filters together', async () => {
    for (let i = 0; i < 3; i++) await makeIntent('PROCESSED');
    await publishOldest(5);
    const all = (await recent()).body as Page;
    expect(all.items).toHaveLength(9);

    const created = (await recent({ type: SUBJECTS.intentCreated })).body as Page;
    expect(created.items.map((e) => e.id)).toEqual(all.items.filter((e) => e.type === SUBJECTS.intentCreated).map((e) => e.id));
    expect(created.items).toHaveLength(3);

    const waiting = (await recent({ state: 'waiting' })).body as Page;
    expect(waiting.items.map((e) => e.id)).toEqual(await outboxIds('waiting'));
    expect(waiting.items.every((e) => e.publishedAt === null && e.streamSeq === null)).toBe(true);

    const published = (await recent({ state: 'published' })).body as Page;
    expect(published.items.map((e) => e.id)).toEqual(await outboxIds('published'));
    expect(published.items).toHaveLength(5);
    expect(published.items.every((e) => e.publishedAt !== null && e.streamSeq === 1000 + Number(e.id))).toBe(true);

    const both = (await recent({ type: SUBJECTS.statusChanged, state: 'waiting' })).body as Page;
    expect(both.items.map((e) => e.id)).toEqual(waiting.items.filter((e) => e.type === SUBJECTS.statusChanged).map((e) => e.id));
    expect(both.items.length).toBeGreaterThan(0);

    expect(((await recent({ type: SUBJECTS.lockDenied })).body as Page).items).toEqual([]);
  });

  it('keeps one intent’s events, with the other filters too', async () => {
    const mine = await makeIntent('PROCESSED');
    await makeIntent('PROCESSED');
    await publishOldest(1);
    const all = (await recent()).body as Page;
    const ofMine = (await recent({ intent: mine.id })).body as Page;
    expect(ofMine.items.map((e) => e.id)).toEqual(all.items.filter((e) => e.intentId === mine.id).map((e) => e.id));
    expect(ofMine.items.map((e) => e.type)).toEqual([SUBJECTS.statusChanged, SUBJECTS.statusChanged, SUBJECTS.intentCreated]);
    // Upper case is the same intent.
    expect(((await recent({ intent: mine.id.toUpperCase() })).body as Page).items).toHaveLength(3);
    const published = (await recent({ intent: mine.id, state: 'published' })).body as Page;
    expect(published.items.map((e) => e.type)).toEqual([SUBJECTS.intentCreated]);
    const created = (await recent({ intent: mine.id, type: SUBJECTS.intentCreated, state: 'waiting' })).body as Page;
    expect(created.items).toEqual([]);
  });

  it('pages by cursor without skipping or repeating, filters kept, while new events arrive', async () => {
    const intents = [];
    for (let i = 0; i < 4; i++) intents.push(await makeIntent('NORMALIZED'));
    const expected = await outboxIds();
    expect(expected).toHaveLength(8);

    const pages = await walk({ limit: '3' });
    expect(pages.map((p) => p.length)).toEqual([3, 3, 2]);
    expect(pages.flat().map((e) => e.id)).toEqual(expected);

    // The second page continues from the first's last event even when newer events were written in between.
    const firstPage = (await recent({ limit: '3' })).body as Page;
    await updateIntentStatus({ id: intents[0].id, status: 'PROCESSED' }, tester);
    const secondPage = (await recent({ limit: '3', cursor: firstPage.nextCursor! })).body as Page;
    expect(secondPage.items.map((e) => e.id)).toEqual(expected.slice(3, 6));

    // A filter holds across pages: one type, two at a time.
    const changes = await walk({ type: SUBJECTS.statusChanged, limit: '2' });
    expect(changes.flat().every((e) => e.type === SUBJECTS.statusChanged)).toBe(true);
    expect(changes.flat()).toHaveLength(5);
    expect(new Set(changes.flat().map((e) => e.id)).size).toBe(5);
  });

  it('needs the Events page’s permission: 401 without credentials, 403 for a user with no role', async () => {
    expect(OPERATIONS.find((op) => op.operationId === 'listOutboxEvents')).toMatchObject({ auth: 'bearer', permission: 'intents.read' });
    await makeIntent('RECEIVED');
    const anonymous = await recent({}, null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('unauthenticated');
    const forbidden = await recent({}, noRoles);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.code).toBe('forbidden');
  });

  it.each([
    [{ type: 'evt.intent.nope' }, 'type'],
    [{ state: 'sent' }, 'state'],
    [{ intent: '0b7f7c' }, 'intent'],
    [{ cursor: 'not a cursor!' }, 'cursor'],
    [{ cursor: Buffer.from('o-12').toString('base64url') }, 'cursor'],
    [{ cursor: Buffer.from('o99999999999999999999').toString('base64url') }, 'cursor'],
    [{ limit: '0' }, 'limit'],
    [{ limit: '201' }, 'limit'],
    [{ limit: 'ten' }, 'limit'],
    [{ since: 'yesterday' }, 'since'],
  ])('400 for %j, naming %s', async (query, field) => {
    const res = await recent(query as Record<string, string>);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual([field]);
  });
});
