import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { db } from '@/lib/db/client';
import { bulkUpdateStatus, updateIntentStatus } from '@/lib/intents/commands';
import { InvalidTransitionError } from '@/lib/intents/errors';
import { getIntentTimeline } from '@/lib/timeline/timeline';
import { resetAuth, userWithSession } from '../auth-helpers';
import { api, signInApiCaller } from '../api/route-client';
import { intentRow, makeIntent, resetDatabase, tester } from '../helpers';
import { request, resetRequest, SAME_ORIGIN } from '../next-request';

/**
 * A refused status change is audited like an accepted one, by the engine itself (so every door gets it): one
 * audit_events row `status_change_refused` saying what was asked, at which version, why it was refused and the
 * reason the caller gave — and nothing else moves (no status, no version, no status_changed event out).
 */
vi.mock('next/headers', () => import('../next-request').then((m) => m.nextHeaders));
vi.mock('next/cache', () => import('../next-request').then((m) => m.nextCache));
vi.mock('next/navigation', () => import('../next-request').then((m) => m.nextNavigation));

const { changeIntentStatusAction } = await import('@/app/actions/intents');

type Row = { action: string; actor: string; fromStatus: string | null; toStatus: string | null; versionAfter: number | null; details: Record<string, unknown> | null };

async function auditOf(id: string): Promise<Row[]> {
  return db().$queryRaw<Row[]>`
    SELECT action, actor, from_status::text AS "fromStatus", to_status::text AS "toStatus", version_after AS "versionAfter", details
    FROM audit_events WHERE intent_id = ${id}::uuid ORDER BY id`;
}
const refusedRows = async (id: string) => (await auditOf(id)).filter((r) => r.action === 'status_change_refused');

async function statusEventsOut(id: string): Promise<number> {
  const [row] = await db().$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM outbox_events WHERE ordering_key = ${id} AND subject = 'evt.intent.status_changed'`;
  return row.n;
}

let operatorName = '';
let apiCaller = '';

beforeAll(async () => {
  await resetDatabase();
  await resetAuth();
  ({ username: apiCaller } = await signInApiCaller());
  const operator = await userWithSession(['operator']);
  operatorName = operator.user.username;
  resetRequest({ ...SAME_ORIGIN, 'x-forwarded-for': '127.0.0.1' });
  request.cookie = operator.cookie;
});
afterAll(() => resetRequest());

describe('a refused terminal status change is on record', () => {
  it('through the engine: COMPLETED → FAILED is refused, audited with why and the reason given, and nothing moves', async () => {
    const intent = await makeIntent('COMPLETED');
    const eventsBefore = await statusEventsOut(intent.id);
    await expect(updateIntentStatus({ id: intent.id, status: 'FAILED', reason: 'customer cancelled' }, tester)).rejects.toBeInstanceOf(InvalidTransitionError);
    const [refused] = await refusedRows(intent.id);
    expect(refused).toMatchObject({
      actor: tester.name,
      fromStatus: null,
      toStatus: null,
      versionAfter: null,
      details: { refused: 'invalid_transition', from: 'COMPLETED', to: 'FAILED', version: 3, reason: 'customer cancelled' },
    });
    expect(String(refused.details?.why)).toContain('the intent is COMPLETED');
    expect(await intentRow(intent.id)).toMatchObject({ status: 'COMPLETED', version: 3 });
    // Nothing moved, so nothing is announced to other services as a status change.
    expect(await statusEventsOut(intent.id)).toBe(eventsBefore);
  });

  it('through the API: 409 invalid_transition, audited under the token’s user', async () => {
    const intent = await makeIntent('FAILED');
    const res = await api.status(intent.id, { status: 'COMPLETED' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('invalid_transition');
    const rows = await refusedRows(intent.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ actor: apiCaller, details: { from: 'FAILED', to: 'COMPLETED', version: 1 } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'FAILED', version: 1 });
  });

  it('through the server action: refused, audited under the signed-in operator with the reason typed', async () => {
    const intent = await makeIntent('COMPLETED');
    const result = await changeIntentStatusAction({ id: intent.id, status: 'FAILED', expectedVersion: 3, reason: 'partner reported a duplicate' });
    expect(result).toMatchObject({ ok: false, error: { code: 'invalid_transition' } });
    const rows = await refusedRows(intent.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ actor: operatorName, details: { from: 'COMPLETED', to: 'FAILED', version: 3, reason: 'partner reported a duplicate' } });
  });

  it('a keyed repeat replays the refusal without a second row; an accepted change is still a status_change', async () => {
    const intent = await makeIntent('COMPLETED');
    const body = { status: 'FAILED', idempotencyKey: `refused-${intent.id}` };
    expect((await api.status(intent.id, body)).status).toBe(409);
    expect((await api.status(intent.id, body)).status).toBe(409);
    expect(await refusedRows(intent.id)).toHaveLength(1);

    const other = await makeIntent('PROCESSED');
    await updateIntentStatus({ id: other.id, status: 'COMPLETED' }, tester);
    const actions = (await auditOf(other.id)).map((r) => r.action);
    expect(actions).not.toContain('status_change_refused');
    expect(actions.at(-1)).toBe('status_change');
  });

  it('a bulk change refused whole: each intent that could not move is audited with the batch’s size, the others have nothing', async () => {
    const movable = await makeIntent('PROCESSED');
    const done = await makeIntent('COMPLETED');
    const failed = await makeIntent('FAILED');
    await expect(bulkUpdateStatus({ ids: [movable.id, done.id, failed.id], status: 'CORRECTED', reason: 'partner resent' }, tester)).rejects.toBeInstanceOf(InvalidTransitionError);
    for (const [intent, from, version] of [[done, 'COMPLETED', 3], [failed, 'FAILED', 1]] as const) {
      const rows = await refusedRows(intent.id);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ actor: tester.name, fromStatus: null, toStatus: null, details: { from, to: 'CORRECTED', version, reason: 'partner resent', batchSize: 3, refusedInBatch: 2 } });
    }
    expect(await refusedRows(movable.id)).toEqual([]);
    expect(await intentRow(movable.id)).toMatchObject({ status: 'PROCESSED', version: 2 });
    const { items } = await getIntentTimeline(done.id);
    expect(items.find((e) => e.summary.startsWith('Refused'))?.summary).toMatch(/^Refused in a bulk change, which moved none of its intents: COMPLETED → CORRECTED \(/);
  });

  it('a bulk change refused through the API: 409, audited under the token’s user', async () => {
    const movable = await makeIntent('RECEIVED');
    const done = await makeIntent('COMPLETED');
    const res = await api.bulk({ ids: [movable.id, done.id], status: 'NORMALIZED' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('invalid_transition');
    expect(await refusedRows(done.id)).toMatchObject([{ actor: apiCaller, details: { from: 'COMPLETED', to: 'NORMALIZED', batchSize: 2, refusedInBatch: 1 } }]);
    expect(await refusedRows(movable.id)).toEqual([]);
  });

  it('the intent’s timeline tells the refusal as a refusal', async () => {
    const intent = await makeIntent('COMPLETED');
    await expect(updateIntentStatus({ id: intent.id, status: 'FAILED', reason: 'too late' }, tester)).rejects.toBeInstanceOf(InvalidTransitionError);
    const { items } = await getIntentTimeline(intent.id);
    const refused = items.find((e) => e.summary.startsWith('Refused:'));
    expect(refused?.summary).toContain('COMPLETED → FAILED');
    expect(refused?.summary).toContain('“too late”');
    expect(refused?.details).toMatchObject({ refused: true, from: 'COMPLETED', to: 'FAILED' });
  });
});
