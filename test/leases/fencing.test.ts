import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { POST as statusRoute } from '@/app/api/intents/[id]/status/route';
import { POST as reevalRoute } from '@/app/api/intents/[id]/reeval/route';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { FencingTokenStaleError } from '@/lib/leases/errors';
import { highestAcceptedToken } from '@/lib/leases/fencing';
import type pg from 'pg';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { intentRow, makeIntent, rawClient, resetDatabase, tester, waitForLockWaiters } from '../helpers';

const accept = async (client: pg.Client, resource: string, token: number) =>
  (await client.query<{ ok: boolean }>('SELECT bridge_fence_accept($1, $2) AS ok', [resource, token])).rows[0].ok;

const auditCount = async (client: pg.Client, id: string) =>
  Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM audit_events WHERE intent_id = $1', [id])).rows[0].n);

describe('the fencing rule (bridge_fence_accept)', () => {
  const clients: pg.Client[] = [];
  const open = async () => {
    const c = await rawClient('bridge-test:fence');
    clients.push(c);
    return c;
  };
  beforeEach(resetDatabase);
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.end()));
  });

  it('accepts a first token, an equal one and a higher one; refuses a lower one; the mark only grows', async () => {
    const c = await open();
    expect(await accept(c, 'r', 5)).toBe(true);
    expect(await accept(c, 'r', 5)).toBe(true);
    expect(await accept(c, 'r', 4)).toBe(false);
    expect(await highestAcceptedToken('r')).toBe(5);
    expect(await accept(c, 'r', 7)).toBe(true);
    expect(await accept(c, 'r', 6)).toBe(false);
    expect(await highestAcceptedToken('r')).toBe(7);
    // Resources are fenced apart.
    expect(await accept(c, 'other', 1)).toBe(true);
  });

  it('a lower token arriving while a higher one is being written waits for it, then is refused', async () => {
    const higher = await open();
    const lower = await open();
    await higher.query('BEGIN');
    expect(await accept(higher, 'race', 9)).toBe(true);
    const lowerAnswer = accept(lower, 'race', 3);
    await waitForLockWaiters(1);
    await higher.query('COMMIT');
    expect(await lowerAnswer).toBe(false);
  });

  it('a higher token arriving while a lower one is being written waits, then is accepted; a rolled-back write leaves no mark', async () => {
    const lower = await open();
    const higher = await open();
    await lower.query('BEGIN');
    expect(await accept(lower, 'race2', 3)).toBe(true);
    const higherAnswer = accept(higher, 'race2', 9);
    await waitForLockWaiters(1);
    await lower.query('COMMIT');
    expect(await higherAnswer).toBe(true);

    await lower.query('BEGIN');
    expect(await accept(lower, 'race3', 50)).toBe(true);
    await lower.query('ROLLBACK');
    expect(await accept(lower, 'race3', 2)).toBe(true);
  });
});

describe('fenced writes in the engine', () => {
  beforeEach(resetDatabase);

  const fencing = (token: number) => ({ resource: 'fence:engine', token });

  it.each([
    ['waiting for the row lock', {}],
    ['nowait', { nowait: true }],
    ['with an idempotency key', { idempotencyKey: 'fenced-status' }],
  ])('status update (%s): a stale token is refused with 409 fencing_token_stale and nothing changes', async (_name, extra) => {
    const intent = await makeIntent('RECEIVED');
    const moved = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', fencing: fencing(2), ...extra }, tester);
    expect(moved.intent.version).toBe(1);
    const c = await rawClient();
    const auditBefore = await auditCount(c, intent.id);
    const refused = await updateIntentStatus({ id: intent.id, status: 'PROCESSED', fencing: fencing(1), ...extra, ...('idempotencyKey' in extra ? { idempotencyKey: 'fenced-status-2' } : {}) }, tester).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FencingTokenStaleError);
    expect(refused).toMatchObject({ httpStatus: 409, code: 'fencing_token_stale', details: { resource: 'fence:engine', token: 1 } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
    expect(await auditCount(c, intent.id)).toBe(auditBefore);
    await c.end();
    // The current holder's token still writes, as often as it needs to.
    expect((await updateIntentStatus({ id: intent.id, status: 'PROCESSED', fencing: fencing(2) }, tester)).intent.version).toBe(2);
    expect((await updateIntentStatus({ id: intent.id, status: 'COMPLETED', fencing: fencing(3) }, tester)).intent.version).toBe(3);
  });

  it.each(['optimistic', 'pessimistic', 'adaptive'] as const)('correction (%s): a stale token is refused, nothing changes; a fresh one applies', async (strategy) => {
    const intent = await makeIntent('PROCESSED', { counter: 0 });
    await reevaluateIntent({ id: intent.id, diff: { counter: 1 }, source: 't', reason: 'first', fencing: fencing(5) }, tester, { strategy });
    const refused = await reevaluateIntent({ id: intent.id, diff: { counter: 2 }, source: 't', reason: 'stale', fencing: fencing(4) }, tester, { strategy }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FencingTokenStaleError);
    expect(await intentRow(intent.id)).toMatchObject({ version: 3, payload: { counter: 1 } });
    const ok = await reevaluateIntent({ id: intent.id, diff: { counter: 2 }, source: 't', reason: 'fresh', fencing: fencing(6) }, tester, { strategy });
    expect(ok).toMatchObject({ version: 4, alreadyApplied: false });
  });

  it('writes without fencing are not affected by the fence', async () => {
    const intent = await makeIntent('PROCESSED', { counter: 0 });
    await reevaluateIntent({ id: intent.id, diff: { counter: 1 }, source: 't', reason: 'fenced', fencing: fencing(9) }, tester);
    expect((await reevaluateIntent({ id: intent.id, diff: { counter: 2 }, source: 't', reason: 'unfenced' }, tester)).version).toBe(4);
  });
});

describe('fenced writes through the API', () => {
  let token: string;
  beforeAll(async () => {
    await resetAuth();
    token = (await userWithToken(['operator', 'reviewer'])).token;
  });
  beforeEach(resetDatabase);

  it('POST /api/intents/:id/status and /reeval answer a stale token with 409 fencing_token_stale', async () => {
    const intent = await makeIntent('RECEIVED');
    const post = async (route: typeof statusRoute, op: string, body: unknown) => {
      const res = await route(apiRequest(`/api/intents/${intent.id}/${op}`, { method: 'POST', token, body }), { params: Promise.resolve({ id: intent.id }) });
      return { status: res.status, body: await res.json() };
    };
    expect((await post(statusRoute, 'status', { status: 'NORMALIZED', fencing: { resource: 'api:fence', token: 3 } })).status).toBe(200);
    const stale = await post(statusRoute, 'status', { status: 'PROCESSED', fencing: { resource: 'api:fence', token: 2 } });
    expect(stale.status).toBe(409);
    expect(stale.body.error).toMatchObject({ code: 'fencing_token_stale', details: { resource: 'api:fence', token: 2 } });
    const staleCorrection = await post(reevalRoute, 'reeval', { diff: { a: 1 }, source: 's', reason: 'r', fencing: { resource: 'api:fence', token: 1 } });
    expect(staleCorrection.status).toBe(409);
    expect(staleCorrection.body.error.code).toBe('fencing_token_stale');
    const bad = await post(statusRoute, 'status', { status: 'PROCESSED', fencing: { resource: 'api:fence', token: 0 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['fencing.token']);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
  });
});
