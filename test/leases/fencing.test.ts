import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { FencingTokenStaleError } from '@/lib/leases/errors';
import { highestAcceptedToken } from '@/lib/leases/fencing';
import { PostgresLeases } from '@/lib/leases/postgres';
import type pg from 'pg';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { intentRow, makeIntent, rawClient, resetDatabase, tester } from '../helpers';
import { waitForWaiters } from '../barriers';
import { apiRoute } from '@/lib/http/api-router';

const { POST: statusRoute } = apiRoute('/api/intents/{id}/status');
const { POST: reevalRoute } = apiRoute('/api/intents/{id}/reeval');

const accept = async (client: pg.Client, resource: string, token: number) =>
  (await client.query<{ ok: boolean }>('SELECT bridge_fence_accept($1, $2) AS ok', [resource, token])).rows[0].ok;
const grant = async (client: pg.Client, resource: string, token: number) =>
  (await client.query<{ ok: boolean }>('SELECT bridge_fence_grant($1, $2) AS ok', [resource, token])).rows[0].ok;

const auditCount = async (client: pg.Client, id: string) =>
  Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM audit_events WHERE intent_id = $1', [id])).rows[0].n);

/** A real lease on `resource`, passed on to a new holder each time: the token each grant answered. */
async function grantTokens(resource: string, n: number): Promise<number[]> {
  const leases = new PostgresLeases();
  const tokens: number[] = [];
  for (let i = 0; i < n; i++) {
    const g = await leases.acquire(resource, `holder-${i}`, 60_000);
    if (!g.acquired) throw new Error('not acquired');
    tokens.push(g.token);
    await leases.release(resource, `holder-${i}`, g.token);
  }
  return tokens;
}

describe('the fencing rule (bridge_fence_grant, bridge_fence_accept)', () => {
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

  it('a write is accepted with the current grant only: not a superseded one, not one never granted; writes never move the mark', async () => {
    const c = await open();
    expect(await accept(c, 'r', 1)).toBe(false); // never granted: refused, and no fence row appears
    expect(await highestAcceptedToken('r')).toBeNull();
    expect(await grant(c, 'r', 5)).toBe(true);
    expect(await accept(c, 'r', 5)).toBe(true);
    expect(await accept(c, 'r', 5)).toBe(true);
    expect(await accept(c, 'r', 4)).toBe(false);
    expect(await accept(c, 'r', 6)).toBe(false);
    expect(await accept(c, 'r', Number.MAX_SAFE_INTEGER)).toBe(false);
    expect(await highestAcceptedToken('r')).toBe(5);
    // Grants only go up.
    expect(await grant(c, 'r', 5)).toBe(false);
    expect(await grant(c, 'r', 3)).toBe(false);
    expect(await grant(c, 'r', 7)).toBe(true);
    expect(await accept(c, 'r', 5)).toBe(false);
    expect(await accept(c, 'r', 7)).toBe(true);
    expect(await highestAcceptedToken('r')).toBe(7);
    // Resources are fenced apart.
    expect(await accept(c, 'other', 7)).toBe(false);
  });

  it('a grant arriving while the holder writes waits for the write to commit; the holder’s next write is refused', async () => {
    const writer = await open();
    const granter = await open();
    expect(await grant(writer, 'race', 3)).toBe(true);
    await writer.query('BEGIN');
    expect(await accept(writer, 'race', 3)).toBe(true);
    // A second write of the same holder is not held up by the first.
    const second = await open();
    expect(await accept(second, 'race', 3)).toBe(true);
    const granted = grant(granter, 'race', 4);
    await waitForWaiters(1);
    await writer.query('COMMIT');
    expect(await granted).toBe(true);
    expect(await accept(writer, 'race', 3)).toBe(false);
  });

  it('a write arriving while a grant is being made waits for it, then is refused; a rolled-back grant leaves the old holder current', async () => {
    const granter = await open();
    const writer = await open();
    expect(await grant(granter, 'race2', 3)).toBe(true);
    await granter.query('BEGIN');
    expect(await grant(granter, 'race2', 9)).toBe(true);
    const written = accept(writer, 'race2', 3);
    await waitForWaiters(1);
    await granter.query('COMMIT');
    expect(await written).toBe(false);

    await granter.query('BEGIN');
    expect(await grant(granter, 'race2', 50)).toBe(true);
    await granter.query('ROLLBACK');
    expect(await accept(writer, 'race2', 9)).toBe(true);
  });
});

describe('64-bit tokens', () => {
  beforeEach(resetDatabase);

  it('a token past 2^31 is granted, written with and published whole (no integer cast on the way)', async () => {
    const c = await rawClient();
    expect(await grant(c, 'big', 2 ** 31 + 5)).toBe(true);
    const leases = new PostgresLeases();
    const g = await leases.acquire('big', 'svc', 60_000);
    expect(g).toMatchObject({ acquired: true, token: 2 ** 31 + 6 });
    const intent = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', fencing: { resource: 'big', token: 2 ** 31 + 6 } }, tester);
    const published = await c.query<{ version: string; token: string }>(
      `SELECT payload->>'version' AS version, payload->'data'->>'fencingToken' AS token FROM outbox_events WHERE subject = 'evt.lock.acquired' AND ordering_key = 'big'`,
    );
    expect(published.rows).toEqual([{ version: String(2 ** 31 + 6), token: String(2 ** 31 + 6) }]);
    await c.end();
  });
});

describe('fenced writes in the engine', () => {
  beforeEach(resetDatabase);

  const fencing = (token: number) => ({ resource: 'fence:engine', token });

  it.each([
    ['waiting for the row lock', {}],
    ['nowait', { nowait: true }],
    ['with an idempotency key', { idempotencyKey: 'fenced-status' }],
  ])('status update (%s): a superseded or never-granted token is refused with 409 fencing_token_stale and nothing changes', async (_name, extra) => {
    const intent = await makeIntent('RECEIVED');
    const [t1, t2] = await grantTokens('fence:engine', 2);
    const moved = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', fencing: fencing(t2), ...extra }, tester);
    expect(moved.intent.version).toBe(1);
    const c = await rawClient();
    const auditBefore = await auditCount(c, intent.id);
    for (const [n, token] of [t1, t2 + 1].entries()) {
      const key = 'idempotencyKey' in extra ? { idempotencyKey: `fenced-status-${n}` } : {};
      const refused = await updateIntentStatus({ id: intent.id, status: 'PROCESSED', fencing: fencing(token), ...extra, ...key }, tester).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(FencingTokenStaleError);
      expect(refused).toMatchObject({ httpStatus: 409, code: 'fencing_token_stale', details: { resource: 'fence:engine', token } });
    }
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
    expect(await auditCount(c, intent.id)).toBe(auditBefore);
    expect(await highestAcceptedToken('fence:engine')).toBe(t2);
    await c.end();
    // The current holder's token still writes, as often as it needs to.
    expect((await updateIntentStatus({ id: intent.id, status: 'PROCESSED', fencing: fencing(t2) }, tester)).intent.version).toBe(2);
    expect((await updateIntentStatus({ id: intent.id, status: 'COMPLETED', fencing: fencing(t2) }, tester)).intent.version).toBe(3);
  });

  it.each(['optimistic', 'pessimistic', 'adaptive'] as const)('correction (%s): a stale or forged token is refused, nothing changes; the current one applies', async (strategy) => {
    const intent = await makeIntent('PROCESSED', { counter: 0 });
    const [t1, t2] = await grantTokens('fence:engine', 2);
    await reevaluateIntent({ id: intent.id, diff: { counter: 1 }, source: 't', reason: 'first', fencing: fencing(t2) }, tester, { strategy });
    for (const token of [t1, t2 + 1, Number.MAX_SAFE_INTEGER]) {
      const refused = await reevaluateIntent({ id: intent.id, diff: { counter: 2 }, source: 't', reason: 'stale', fencing: fencing(token) }, tester, { strategy }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(FencingTokenStaleError);
    }
    expect(await intentRow(intent.id)).toMatchObject({ version: 3, payload: { counter: 1 } });
    expect(await highestAcceptedToken('fence:engine')).toBe(t2);
    const ok = await reevaluateIntent({ id: intent.id, diff: { counter: 2 }, source: 't', reason: 'fresh', fencing: fencing(t2) }, tester, { strategy });
    expect(ok).toMatchObject({ version: 4, alreadyApplied: false });
  });

  it('a fenced-out writer is refused also when the intent already looks as it asks: never "already applied"', async () => {
    const intent = await makeIntent('RECEIVED', { counter: 0 });
    const [t1, t2] = await grantTokens('fence:engine', 2);
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', fencing: fencing(t1) }, tester).catch(() => undefined); // refused: t2 is current
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', fencing: fencing(t2) }, tester);
    await updateIntentStatus({ id: intent.id, status: 'PROCESSED', fencing: fencing(t2) }, tester);
    await reevaluateIntent({ id: intent.id, diff: { counter: 1 }, source: 't', reason: 'holder', fencing: fencing(t2) }, tester);
    const before = await intentRow(intent.id);
    const tries: { token: number; resource?: string }[] = [{ token: t1 }, { token: t2 + 1 }, { token: 99, resource: 'fence:never-granted' }];
    for (const { token, resource } of tries) {
      const f = { resource: resource ?? 'fence:engine', token };
      // The status it asks for is the intent's status, at the version it names: a repeat of the holder's own change.
      const status = await updateIntentStatus({ id: intent.id, status: 'CORRECTED', expectedVersion: before.version, fencing: f }, tester).catch((e: unknown) => e);
      expect(status).toBeInstanceOf(FencingTokenStaleError);
      // The very correction the holder applied.
      const correction = await reevaluateIntent({ id: intent.id, diff: { counter: 1 }, source: 't', reason: 'late repeat', fencing: f }, tester).catch((e: unknown) => e);
      expect(correction).toBeInstanceOf(FencingTokenStaleError);
      // A stale version too: the fence is what it is told first.
      const both = await updateIntentStatus({ id: intent.id, status: 'COMPLETED', expectedVersion: 0, fencing: f }, tester).catch((e: unknown) => e);
      expect(both).toBeInstanceOf(FencingTokenStaleError);
    }
    expect(await intentRow(intent.id)).toMatchObject({ status: before.status, version: before.version });
    // The holder's own repeat is still recognised.
    const repeat = await reevaluateIntent({ id: intent.id, diff: { counter: 1 }, source: 't', reason: 'repeat', fencing: fencing(t2) }, tester);
    expect(repeat).toMatchObject({ alreadyApplied: true, version: before.version });
  });

  it('writes without fencing are not affected by the fence', async () => {
    const intent = await makeIntent('PROCESSED', { counter: 0 });
    const [t] = await grantTokens('fence:engine', 1);
    await reevaluateIntent({ id: intent.id, diff: { counter: 1 }, source: 't', reason: 'fenced', fencing: fencing(t) }, tester);
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
    const [t1, t2] = await grantTokens('api:fence', 2);
    expect((await post(statusRoute, 'status', { status: 'NORMALIZED', fencing: { resource: 'api:fence', token: t2 } })).status).toBe(200);
    const stale = await post(statusRoute, 'status', { status: 'PROCESSED', fencing: { resource: 'api:fence', token: t1 } });
    expect(stale.status).toBe(409);
    expect(stale.body.error).toMatchObject({ code: 'fencing_token_stale', details: { resource: 'api:fence', token: t1 } });
    const staleCorrection = await post(reevalRoute, 'reeval', { diff: { a: 1 }, source: 's', reason: 'r', fencing: { resource: 'api:fence', token: t1 } });
    expect(staleCorrection.status).toBe(409);
    expect(staleCorrection.body.error.code).toBe('fencing_token_stale');
    const bad = await post(statusRoute, 'status', { status: 'PROCESSED', fencing: { resource: 'api:fence', token: 0 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['fencing.token']);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
  });
});
