import { beforeEach, describe, expect, it } from 'vitest';
import { listAudit, type AuditEntry } from '@/lib/audit/log';
import { recordAuthEvent } from '@/lib/auth/events';
import { db } from '@/lib/db/client';
import { ValidationError } from '@/lib/shared/errors';
import { updateIntentStatus } from '@/lib/intents/commands';
import { resetAuth } from '../auth-helpers';
import { makeIntent, resetDatabase, tester } from '../helpers';

/** Every page of the log for a filter, following nextCursor, with a small page size to cross many boundaries. */
async function allPages(filter: Record<string, string>, limit = 2): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await listAudit({ ...filter, limit, ...(cursor ? { cursor } : {}) });
    out.push(...page.items);
    if (!page.nextCursor) return out;
    cursor = page.nextCursor;
  }
  throw new Error('the cursor never ended');
}

describe('global audit log', () => {
  beforeEach(async () => {
    await resetDatabase();
    await resetAuth();
  });

  it('pages through both tables newest first, with ties at one instant, without gaps or repeats', async () => {
    const a = await makeIntent('NORMALIZED');
    await recordAuthEvent({ action: 'auth.sign_in', actor: 'kim', subject: 'kim' });
    await updateIntentStatus({ id: a.id, status: 'PROCESSED' }, { name: 'kim' });
    await recordAuthEvent({ action: 'token.created', actor: 'kim', subject: 'kim', details: { name: 'ci', prefix: 'bc_ab' } });
    // Rows at one and the same instant in both tables: the cursor must order them and cross them exactly once.
    // An hour ago, not a fixed date: audit_events has partitions only from the month before the database was made.
    const instant = new Date(Math.floor(Date.now() / 1000) * 1000 - 3_600_000);
    await db().$executeRaw`INSERT INTO audit_events (intent_id, action, actor, at) SELECT ${a.id}::uuid, 'status_change', 'tie', ${instant}::timestamptz FROM generate_series(1, 3)`;
    await db().$executeRaw`INSERT INTO auth_events (action, actor, at) SELECT 'auth.sign_in', 'tie', ${instant}::timestamptz FROM generate_series(1, 3)`;

    const expected = [
      ...(await db().$queryRaw<{ key: string; at: Date; rank: number; id: bigint }[]>`
        SELECT 'intent:' || id AS key, at, 1 AS rank, id FROM audit_events
        UNION ALL SELECT 'auth:' || id, at, 0, id FROM auth_events
        ORDER BY at DESC, rank DESC, id DESC`),
    ].map((r) => r.key);
    for (const limit of [1, 2, 3, 50]) {
      const keys = (await allPages({}, limit)).map((e) => e.key);
      expect(keys).toEqual(expected);
    }
  });

  it('filters by actor, action, intent and time, and an intent filter leaves the security log out', async () => {
    const a = await makeIntent('RECEIVED');
    const b = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: a.id, status: 'FAILED' }, { name: 'kim' });
    await updateIntentStatus({ id: b.id, status: 'NORMALIZED' }, { name: 'lee' });
    await recordAuthEvent({ action: 'auth.sign_in', actor: 'kim', subject: 'kim' });

    expect((await allPages({ actor: 'kim' })).map((e) => e.action).sort()).toEqual(['auth.sign_in', 'status_change']);
    expect((await allPages({ action: 'status_change' })).map((e) => e.intentId).sort()).toEqual([a.id, b.id].sort());
    expect((await allPages({ action: 'auth.sign_in' })).map((e) => e.source)).toEqual(['auth']);
    const onA = await allPages({ intent: a.id });
    expect(onA.map((e) => e.action)).toEqual(['status_change', 'created']);
    expect(onA.every((e) => e.intentId === a.id)).toBe(true);

    const future = new Date(Date.now() + 60_000).toISOString();
    expect(await allPages({ from: future })).toEqual([]);
    expect((await allPages({ to: future, actor: tester.name })).length).toBe(2);
    // datetime-local values (no zone) are read as UTC.
    expect((await allPages({ from: '2000-01-01T00:00', actor: 'lee' })).length).toBe(1);
  });

  it('leaves a contention replay’s intents out unless asked, or unless one of them is asked for by its id', async () => {
    const real = await makeIntent('RECEIVED');
    const replayed = await makeIntent('RECEIVED');
    await db().$executeRaw`UPDATE intents SET is_replay = true WHERE id = ${replayed.id}::uuid`;
    await updateIntentStatus({ id: real.id, status: 'NORMALIZED' }, { name: 'kim' });
    await updateIntentStatus({ id: replayed.id, status: 'NORMALIZED' }, { name: 'replay:kim' });
    await recordAuthEvent({ action: 'auth.sign_in', actor: 'kim', subject: 'kim' });
    const shown = (entries: AuditEntry[]) => new Set(entries.map((e) => e.intentId));
    expect(shown(await allPages({}))).toEqual(new Set([real.id, null]));
    expect(shown(await allPages({ includeReplay: 'true' }))).toEqual(new Set([real.id, replayed.id, null]));
    expect(shown(await allPages({ intent: replayed.id }))).toEqual(new Set([replayed.id]));
    await expect(listAudit({ includeReplay: 'yes' })).rejects.toMatchObject({ issues: [{ field: 'includeReplay' }] });
  });

  it('filters by an intent named as the console shows it, its first 8 or more characters', async () => {
    const intent = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester);
    const byPrefix = await listAudit({ intent: intent.id.slice(0, 8).toUpperCase() });
    expect(byPrefix.items.length).toBeGreaterThan(0);
    expect(byPrefix.items.every((i) => i.intentId === intent.id)).toBe(true);
    expect((await listAudit({ intent: intent.id })).items).toEqual(byPrefix.items);
    // A prefix no intent has filters to nothing, as a whole id no intent has does.
    const none = intent.id.startsWith('0') ? 'ffffffff' : '00000000';
    expect(await listAudit({ intent: none })).toEqual({ items: [], nextCursor: null });
    // One several intents share is refused, naming the filter.
    await db().$executeRaw`INSERT INTO intents (id, payload, source) VALUES ('abcdef01-0000-4000-8000-000000000001', '{}', 'test'), ('abcdef01-0000-4000-8000-000000000002', '{}', 'test')`;
    const shared = await listAudit({ intent: 'abcdef01' }).catch((e: unknown) => e);
    expect(shared).toMatchObject({ code: 'ambiguous_id', httpStatus: 400, details: { fields: [{ field: 'intent', message: 'matches several intents' }] } });
  });

  it('refuses bad filters with a 400 naming the field', async () => {
    for (const [field, value] of [
      ['action', 'drop_table'],
      ['intent', 'not-a-uuid'],
      ['from', 'yesterday'],
      ['cursor', 'bm9wZQ'],
      ['limit', '1000'],
    ] as const) {
      const err = await listAudit({ [field]: value }).catch((e: unknown) => e);
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues[0].field).toBe(field);
    }
    const unknown = await listAudit({ sort: 'asc' }).catch((e: unknown) => e);
    expect((unknown as ValidationError).issues[0].field).toBe('sort');
    // A range that ends before it starts is a mistake to name, not a filter that matches nothing.
    const inverted = await listAudit({ from: '2026-11-28T19:40', to: '2026-11-28T19:20' }).catch((e: unknown) => e);
    expect(inverted).toBeInstanceOf(ValidationError);
    expect((inverted as ValidationError).issues).toEqual([{ field: 'to', message: 'must not be before from' }]);
    expect(await listAudit({ from: '2026-11-28T19:20', to: '2026-11-28T19:20' })).toMatchObject({ items: [] });
  });

  it('reads each table with an index range scan, not a scan of the whole log', async () => {
    // Planner check at the query's shape: with the audit_page indexes the newest-first page of a filter is an
    // index scan (a sequential scan would read tens of millions of rows on a large log).
    await db().$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL enable_seqscan = off`;
      await tx.$executeRaw`SET LOCAL enable_bitmapscan = off`;
      for (const plan of [
        await tx.$queryRaw<{ 'QUERY PLAN': string }[]>`EXPLAIN SELECT id FROM audit_events WHERE actor = 'kim' AND at <= now() AND (at, id) < (now(), 10::bigint) ORDER BY at DESC, id DESC LIMIT 51`,
        await tx.$queryRaw<{ 'QUERY PLAN': string }[]>`EXPLAIN SELECT id FROM audit_events WHERE action = 'correction' ORDER BY at DESC, id DESC LIMIT 51`,
        await tx.$queryRaw<{ 'QUERY PLAN': string }[]>`EXPLAIN SELECT id FROM auth_events WHERE actor = 'kim' ORDER BY at DESC, id DESC LIMIT 51`,
      ]) {
        const text = plan.map((r) => r['QUERY PLAN']).join('\n');
        // On a test-sized table the planner may prefer the plain (at, id) index over the filter's own: both read
        // newest first and stop at the limit, which is what matters here.
        expect(text).toMatch(/Index (Only )?Scan Backward using \w+_at(_id)?_idx/);
        expect(text).not.toMatch(/Sort/);
      }
    });
  });
});
