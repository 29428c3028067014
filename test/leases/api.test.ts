import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { resetDatabase } from '../helpers';
import { apiRoute } from '@/lib/http/api-router';

const { GET: listRoute } = apiRoute('/api/leases');
const { POST: acquireRoute } = apiRoute('/api/leases/{resource}/acquire');
const { POST: refreshRoute } = apiRoute('/api/leases/{resource}/refresh');
const { POST: releaseRoute } = apiRoute('/api/leases/{resource}/release');

let operator: string;
let operatorName: string;
let viewer: string;

async function call(route: typeof acquireRoute, op: string, resource: string, body: unknown, token = operator) {
  const request = apiRequest(`/api/leases/${encodeURIComponent(resource)}/${op}`, { method: 'POST', token, body });
  const res = await route(request, { params: Promise.resolve({ resource }) });
  return { status: res.status, body: await res.json() };
}
const acquire = (resource: string, body: unknown, token?: string) => call(acquireRoute, 'acquire', resource, body, token);
const refresh = (resource: string, body: unknown) => call(refreshRoute, 'refresh', resource, body);
const release = (resource: string, body: unknown) => call(releaseRoute, 'release', resource, body);

describe('the lease API', () => {
  beforeAll(async () => {
    await resetAuth();
    const made = await userWithToken(['operator']);
    operator = made.token;
    operatorName = made.user.username;
    viewer = (await userWithToken(['viewer'])).token;
  });
  beforeEach(resetDatabase);

  it('acquire → 200 with a token; a second owner → 409 lease_denied naming the holder', async () => {
    const first = await acquire('orders/A-17', { owner: 'svc-a', ttlMs: 30_000 });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ acquired: true, token: 1 });
    const second = await acquire('orders/A-17', { owner: 'svc-b', ttlMs: 30_000 });
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({ code: 'lease_denied', details: { owner: 'svc-a', expiresAt: first.body.expiresAt } });
  });

  it('refresh and release need the holder’s token: a stale one → 409 lease_not_held', async () => {
    const { body: lease } = await acquire('orders/A-18', { owner: 'svc-a', ttlMs: 30_000 });
    expect((await refresh('orders/A-18', { owner: 'svc-a', token: lease.token, ttlMs: 60_000 })).status).toBe(200);
    const stale = await release('orders/A-18', { owner: 'svc-a', token: lease.token + 1 });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('lease_not_held');
    expect((await refresh('orders/A-18', { owner: 'svc-b', token: lease.token, ttlMs: 1000 })).body.error.code).toBe('lease_not_held');
    expect(await release('orders/A-18', { owner: 'svc-a', token: lease.token })).toEqual({ status: 200, body: { released: true } });
    expect((await release('orders/A-18', { owner: 'svc-a', token: lease.token })).status).toBe(409);
  });

  it('GET /api/leases lists live leases and their events', async () => {
    await acquire('orders/A-19', { owner: 'svc-a', ttlMs: 30_000 });
    await acquire('orders/A-19', { owner: 'svc-b', ttlMs: 30_000 });
    const res = await listRoute(apiRequest('/api/leases', { method: 'GET', token: viewer }), undefined);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.backend).toBe('postgres');
    // A viewer sees who holds what and who acted, never the tokens.
    expect(body.leases).toEqual([expect.objectContaining({ resource: 'orders/A-19', owner: 'svc-a', actor: operatorName, token: null })]);
    expect(body.events.map((e: { event: string; token: unknown; actor: string }) => [e.event, e.actor, e.token])).toEqual([
      ['denied', operatorName, null],
      ['acquired', operatorName, null],
    ]);
    // The operator, who may use leases, sees them.
    const mine = await (await listRoute(apiRequest('/api/leases', { method: 'GET', token: operator }), undefined)).json();
    expect(mine.leases).toEqual([expect.objectContaining({ owner: 'svc-a', token: 1 })]);
  });

  it('bad input → 400 naming the field, and nothing is written', async () => {
    const cases: [unknown, string[]][] = [
      [{ ttlMs: 1000 }, ['owner']],
      [{ owner: 'x', ttlMs: 0 }, ['ttlMs']],
      [{ owner: 'x', ttlMs: 1.5 }, ['ttlMs']],
      [{ owner: '', ttlMs: 1000 }, ['owner']],
      [{ owner: 'x', ttlMs: 1000, extra: 1 }, ['extra']],
    ];
    for (const [body, fields] of cases) {
      const res = await acquire('orders/bad', body);
      expect(res.status).toBe(400);
      expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(fields);
    }
    const longName = await acquire('x'.repeat(256), { owner: 'x', ttlMs: 1000 });
    expect(longName.status).toBe(400);
    expect(longName.body.error.details.fields[0].field).toBe('resource');
    const listed = await listRoute(apiRequest('/api/leases', { method: 'GET', token: viewer }), undefined);
    expect((await listed.json()).events).toEqual([]);
  });

  it('viewers may look but not take a lease (403)', async () => {
    const res = await acquire('orders/A-20', { owner: 'v', ttlMs: 1000 }, viewer);
    expect(res.status).toBe(403);
  });
});
