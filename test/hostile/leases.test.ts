import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { db } from '@/lib/db/client';
import { editLeaseResource } from '@/lib/leases/edit-names';
import { apiRequest, resetAuth, userWithSession, userWithToken } from '../auth-helpers';
import { makeIntent, resetDatabase } from '../helpers';
import { request, resetRequest } from '../next-request';
import { apiRoute } from '@/lib/http/api-router';

/**
 * The hostile suite for leases and fenced writes: forged fencing tokens, the workers' reserved fences named by
 * callers, and leases touched by callers that did not take them. Every door answers 4xx, and the fences, the lease
 * rows, the lease log and the intents are exactly as before.
 */
vi.mock('next/headers', () => import('../next-request').then((m) => m.nextHeaders));
vi.mock('next/cache', () => import('../next-request').then((m) => m.nextCache));
vi.mock('next/navigation', () => import('../next-request').then((m) => m.nextNavigation));

const { POST: postStatus } = apiRoute('/api/intents/{id}/status');
const { POST: postReeval } = apiRoute('/api/intents/{id}/reeval');
const { POST: postPipeline } = apiRoute('/api/intents/{id}/pipeline');
const { POST: postBulk } = apiRoute('/api/intents/bulk-status');
const { POST: acquireRoute } = apiRoute('/api/leases/{resource}/acquire');
const { POST: refreshRoute } = apiRoute('/api/leases/{resource}/refresh');
const { POST: releaseRoute } = apiRoute('/api/leases/{resource}/release');
const intentActions = await import('@/app/actions/intents');
const pipelineActions = await import('@/app/actions/pipeline');
const leaseActions = await import('@/app/actions/leases');

/** Everything a fenced write or a lease call could move. */
async function leaseState() {
  const [fences, leases, events, intents] = await Promise.all([
    db().$queryRaw<unknown[]>`SELECT resource, token::text FROM lease_fences ORDER BY resource`,
    db().$queryRaw<unknown[]>`SELECT resource, owner, token::text, expires_at, holder_credential FROM leases ORDER BY resource`,
    db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM lease_events`,
    db().$queryRaw<unknown[]>`SELECT id, status::text, version, (SELECT count(*) FROM pipeline_runs r WHERE r.intent_id = i.id)::int AS runs FROM intents i ORDER BY id`,
  ]);
  return { fences, leases, events: Number(events[0].n), intents };
}

type Route = (request: Request, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;
async function call(route: Route, path: string, params: Record<string, string>, body: unknown, token: string) {
  const res = await route(apiRequest(path, { method: 'POST', token, body }), { params: Promise.resolve(params) });
  return { status: res.status, body: (await res.json()) as { error?: { code: string; details?: { fields?: { field: string }[] } } } & Record<string, unknown> };
}
const lease = (op: 'acquire' | 'refresh' | 'release', resource: string, body: unknown, token: string) =>
  call({ acquire: acquireRoute, refresh: refreshRoute, release: releaseRoute }[op] as Route, `/api/leases/${encodeURIComponent(resource)}/${op}`, { resource }, body, token);

let operator: Awaited<ReturnType<typeof userWithToken>>;
let operatorSecondToken: string;
let reviewer: Awaited<ReturnType<typeof userWithSession>>;
let oncall: Awaited<ReturnType<typeof userWithToken>>;
let admin: Awaited<ReturnType<typeof userWithToken>>;

beforeAll(async () => {
  await resetAuth();
  operator = await userWithToken(['operator', 'reviewer']);
  // The same user's second API token: another credential, so another caller to a lease.
  const { generateApiToken, storeApiToken } = await import('@/lib/auth/tokens');
  operatorSecondToken = generateApiToken();
  await storeApiToken({ userId: operator.user.id, name: 'second', token: operatorSecondToken, createdBy: 'test' });
  reviewer = await userWithSession(['reviewer']);
  oncall = await userWithToken(['oncall', 'operator']);
  admin = await userWithToken(['admin']);
});

afterAll(() => resetRequest());
beforeEach(async () => {
  resetRequest();
  await resetDatabase();
});

describe('forged fencing tokens', () => {
  it('a token never granted is refused on every door and moves nothing; the lease API keeps working afterwards', async () => {
    const intent = await makeIntent('PROCESSED');
    const granted = await lease('acquire', 'fence-X', { owner: 'svc', ttlMs: 60_000 }, operator.token);
    expect(granted.status).toBe(200);
    const real = granted.body.token as number;
    const before = await leaseState();
    const forgeries = [Number.MAX_SAFE_INTEGER, real + 1, real + 1000, 2 ** 31, 2 ** 31 - 1];
    const doors = [
      (token: number) => call(postStatus as Route, `/api/intents/${intent.id}/status`, { id: intent.id }, { status: 'COMPLETED', fencing: { resource: 'fence-X', token } }, operator.token),
      (token: number) => call(postReeval as Route, `/api/intents/${intent.id}/reeval`, { id: intent.id }, { diff: { a: token }, source: 's', reason: 'r', fencing: { resource: 'fence-X', token } }, operator.token),
      (token: number) => call(postPipeline as Route, `/api/intents/${intent.id}/pipeline`, { id: intent.id }, { fencing: { resource: 'fence-X', token } }, operator.token),
      // A resource nobody ever leased: no token at all is current there.
      (token: number) => call(postStatus as Route, `/api/intents/${intent.id}/status`, { id: intent.id }, { status: 'COMPLETED', fencing: { resource: 'never-leased', token } }, operator.token),
    ];
    for (const token of forgeries) {
      for (const door of doors) {
        const answer = await door(token);
        expect(answer.status).toBe(409);
        expect(answer.body.error?.code).toBe('fencing_token_stale');
      }
    }
    expect(await leaseState()).toEqual(before);
    // The holder's own token still writes, and the next acquire after its release is answered normally.
    expect((await call(postStatus as Route, `/api/intents/${intent.id}/status`, { id: intent.id }, { status: 'CORRECTED', fencing: { resource: 'fence-X', token: real } }, operator.token)).status).toBe(200);
    expect((await lease('release', 'fence-X', { owner: 'svc', token: real }, operator.token)).status).toBe(200);
    const next = await lease('acquire', 'fence-X', { owner: 'svc', ttlMs: 60_000 }, operator.token);
    expect(next).toMatchObject({ status: 200, body: { acquired: true, token: real + 1 } });
  });

  it('tokens outside what the API carries exactly are a 400 naming fencing.token, from the API and the console alike', async () => {
    const intent = await makeIntent('PROCESSED');
    const before = await leaseState();
    for (const token of [2 ** 53, 9223372036854775807, 1e300, -1, 0, 1.5, '5', null]) {
      const answer = await call(postStatus as Route, `/api/intents/${intent.id}/status`, { id: intent.id }, { status: 'COMPLETED', fencing: { resource: 'fence-Y', token } }, operator.token);
      expect(answer.status).toBe(400);
      expect([...new Set(answer.body.error?.details?.fields?.map((f) => f.field))]).toEqual(['fencing.token']);
    }
    request.cookie = reviewer.cookie;
    const result = await intentActions.correctIntentAction({ id: intent.id, diff: { a: 1 }, source: 's', reason: 'r', fencing: { resource: 'fence-Y', token: 2 ** 53 } });
    expect(result).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
    expect(await leaseState()).toEqual(before);
  });
});

describe('the workers’ reserved fences', () => {
  it('no door lets a caller name worker-claim:<id> in a fencing field (400 naming fencing.resource), in any letter case', async () => {
    const intent = await makeIntent('PROCESSED');
    const failed = await makeIntent('FAILED');
    // A worker's claim fence already exists for the intent: it must stay where it is.
    await db().$executeRaw`SELECT bridge_fence_accept(${`worker-claim:${intent.id}`}, 5)`;
    const before = await leaseState();
    for (const resource of [`worker-claim:${intent.id}`, `WORKER-CLAIM:${intent.id}`, `Worker-Claim:${intent.id.toUpperCase()}`, 'worker-claim:']) {
      const fencing = { resource, token: 9007199254740991 };
      const answers = [
        await call(postStatus as Route, `/api/intents/${intent.id}/status`, { id: intent.id }, { status: 'COMPLETED', fencing }, operator.token),
        await call(postReeval as Route, `/api/intents/${intent.id}/reeval`, { id: intent.id }, { diff: { a: 1 }, source: 's', reason: 'r', fencing }, operator.token),
        await call(postPipeline as Route, `/api/intents/${intent.id}/pipeline`, { id: intent.id }, { fencing }, operator.token),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(400);
        expect(answer.body.error?.details?.fields?.map((f) => f.field)).toEqual(['fencing.resource']);
      }
      // Bulk has no fencing field at all: the API refuses it as an unknown field, never applied. (The console's
      // actions keep only the fields their form has, so there it cannot reach a fence either.)
      const bulk = await call(postBulk as Route, '/api/intents/bulk-status', {}, { ids: [intent.id], status: 'COMPLETED', fencing }, operator.token);
      expect(bulk.status).toBe(400);
      // The console's doors with a fencing field: status, correction, pipeline run and retry.
      request.cookie = reviewer.cookie;
      expect(await intentActions.correctIntentAction({ id: intent.id, diff: { a: 1 }, source: 's', reason: 'r', fencing })).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
      const op = await userWithSession(['operator']);
      request.cookie = op.cookie;
      for (const result of [
        await intentActions.changeIntentStatusAction({ id: intent.id, status: 'COMPLETED', fencing }),
        await pipelineActions.runPipelineAction({ id: intent.id, fencing }),
        await pipelineActions.retryPipelineAction({ id: failed.id, fencing }),
      ]) {
        expect(result).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
      }
      // Nor may anyone take a lease on it.
      expect((await lease('acquire', resource, { owner: 'x', ttlMs: 1000 }, admin.token)).status).toBe(400);
    }
    expect(await leaseState()).toEqual(before);
  });
});

describe('leases belong to the caller that took them', () => {
  it('refresh and release by another credential naming the owner and token: 403 lease_not_yours, nothing changes; an admin may release, and is named', async () => {
    const granted = await lease('acquire', 'orders/1', { owner: 'orders-service', ttlMs: 30_000 }, operator.token);
    const token = granted.body.token as number;
    const before = await leaseState();
    for (const other of [operatorSecondToken, oncall.token]) {
      const refresh = await lease('refresh', 'orders/1', { owner: 'orders-service', token, ttlMs: 86_400_000 }, other);
      expect(refresh).toMatchObject({ status: 403, body: { error: { code: 'lease_not_yours' } } });
      const release = await lease('release', 'orders/1', { owner: 'orders-service', token }, other);
      expect(release).toMatchObject({ status: 403, body: { error: { code: 'lease_not_yours' } } });
      // Re-acquiring under the holder's owner name is a denial, not a takeover.
      expect((await lease('acquire', 'orders/1', { owner: 'orders-service', ttlMs: 1000 }, other)).status).toBe(409);
    }
    const after = await leaseState();
    expect({ ...after, events: 0 }).toEqual({ ...before, events: 0 });
    // Only the denials were recorded, each naming who asked.
    const denials = await db().$queryRaw<{ event: string; actor: string }[]>`SELECT event, actor FROM lease_events WHERE id > (SELECT min(id) FROM lease_events) ORDER BY id`;
    expect(denials).toEqual([
      { event: 'denied', actor: operator.user.username },
      { event: 'denied', actor: oncall.user.username },
    ]);
    // An admin releases it (documented), and the release names the admin, not the owner.
    expect((await lease('release', 'orders/1', { owner: 'orders-service', token }, admin.token)).status).toBe(200);
    const [released] = await db().$queryRaw<{ owner: string; actor: string }[]>`SELECT owner, actor FROM lease_events WHERE event = 'released'`;
    expect(released).toEqual({ owner: 'orders-service', actor: admin.user.username });
  });

  it('a reviewer’s edit lease: an on-call or operator user can neither take it in the reviewer’s name nor release or renew it', async () => {
    const intent = await makeIntent('PROCESSED');
    const resource = editLeaseResource(intent.id);
    request.cookie = reviewer.cookie;
    const taken = await leaseActions.takeEditLeaseAction({ intentId: intent.id });
    if (!taken.ok || !taken.data.held) throw new Error('not held');
    const before = await leaseState();
    // Taking it in their name, even while it is free for a moment, is refused outright.
    for (const who of [oncall.token, operator.token]) {
      expect(await lease('acquire', resource, { owner: reviewer.user.username, ttlMs: 60_000 }, who)).toMatchObject({ status: 403, body: { error: { code: 'lease_not_yours' } } });
      expect(await lease('release', resource, { owner: reviewer.user.username, token: taken.data.token }, who)).toMatchObject({ status: 403, body: { error: { code: 'lease_not_yours' } } });
      expect(await lease('refresh', resource, { owner: reviewer.user.username, token: taken.data.token, ttlMs: 86_400_000 }, who)).toMatchObject({ status: 403 });
    }
    // The console's own doors act for the signed-in user only: an on-call user's release names them, not the reviewer.
    const oncallSession = await userWithSession(['oncall']);
    request.cookie = oncallSession.cookie;
    expect(await leaseActions.releaseEditLeaseAction({ intentId: intent.id, token: taken.data.token })).toEqual({ ok: true, data: { released: false } });
    expect(await leaseState()).toEqual(before);
    // The Locks page shows the owner and the user who took it apart.
    const listed = await (await apiRoute('/api/leases').GET(apiRequest('/api/leases', { token: oncall.token }), undefined)).json();
    expect(listed.leases).toEqual([expect.objectContaining({ resource, owner: reviewer.user.username, actor: reviewer.user.username })]);
  });
});
