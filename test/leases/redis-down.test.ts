import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { redisServerInstalled, startRedisServer } from '../redis-server';
import { eventually } from '../wait';
import { apiRoute } from '@/lib/http/api-router';
import { LeaseBackendUnavailableError } from '@/lib/leases/errors';
import { RedisLeases } from '@/lib/leases/redis';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { intentRow, makeIntent, resetDatabase } from '../helpers';
import { withSettings } from '../settings';

/**
 * Redis going away is a 503 with Retry-After, answered at once — never a 500, never a request left hanging until a
 * command timeout: the lease API (LEASE_BACKEND=redis) answers `lease_backend_unavailable`, the engine with its
 * idempotency keys in Redis (IDEMPOTENCY_BACKEND=redis) `idempotency_backend_unavailable`, and nothing changes. When
 * Redis is back, the same client serves again. This file's own throw-away redis-server is stopped and started.
 */
const server = redisServerInstalled() ? await startRedisServer() : undefined;
if (server) withSettings({ LEASE_BACKEND: 'redis', IDEMPOTENCY_BACKEND: 'redis', REDIS_URL: server.url });

const { POST: acquire } = apiRoute('/api/leases/{resource}/acquire');
const { POST: refresh } = apiRoute('/api/leases/{resource}/refresh');
const { POST: release } = apiRoute('/api/leases/{resource}/release');
const { GET: list } = apiRoute('/api/leases');
const { POST: status } = apiRoute('/api/intents/{id}/status');

afterAll(async () => {
  await server?.stop();
});

type Answer = { status: number; retryAfter: string | null; body: { error?: { code: string }; acquired?: boolean; token?: number } };
const answer = async (res: Response): Promise<Answer> => ({ status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() });

/**
 * Repeats a call while it answers 503, for up to 15 s: after the server comes back the client reconnects on its own
 * backoff, and until it has, every answer is the 503 this file tests for. A 503 changes nothing, so repeating is safe.
 */
async function onceServing(call: () => Promise<Answer>): Promise<Answer> {
  return eventually('an answer other than 503', async () => {
    const got = await call();
    return got.status !== 503 && got;
  }, { everyMs: 20 });
}

describe.skipIf(!server)('Redis unavailable', () => {
  let token: string;
  beforeEach(async () => {
    await server!.up(); // a previous case may have left it down
    await resetDatabase();
    await resetAuth();
    token = (await userWithToken(['operator'])).token;
  });

  const lease = (op: 'acquire' | 'refresh' | 'release', resource: string, body: unknown) => {
    const route = { acquire, refresh, release }[op];
    return route(apiRequest(`/api/leases/${resource}/${op}`, { method: 'POST', token, body }), { params: Promise.resolve({ resource }) }).then(answer);
  };

  it('the lease API answers 503 lease_backend_unavailable with Retry-After while Redis is down, and serves again when it is back', async () => {
    const granted = await lease('acquire', 'down:r', { owner: 'alice', ttlMs: 60_000 });
    expect(granted.status).toBe(200); // connected, and working

    await server!.down();
    const refused = [
      await lease('acquire', 'down:r2', { owner: 'bob', ttlMs: 60_000 }),
      await lease('refresh', 'down:r', { owner: 'alice', token: granted.body.token, ttlMs: 60_000 }),
      await lease('release', 'down:r', { owner: 'alice', token: granted.body.token }),
      await answer(await list(apiRequest('/api/leases', { token }), undefined)),
    ];
    for (const r of refused) expect(r).toMatchObject({ status: 503, retryAfter: '1', body: { error: { code: 'lease_backend_unavailable' } } });
    const events = await (await import('@/lib/db/client')).db().$queryRaw<{ event: string }[]>`SELECT event FROM lease_events ORDER BY id`;
    expect(events.map((e) => e.event)).toEqual(['acquired']);

    // Back (empty, like after a crash): the client reconnects by itself; until it has, the answer stays the 503.
    await server!.up();
    const again = await onceServing(() => lease('acquire', 'down:r3', { owner: 'carol', ttlMs: 60_000 }));
    expect(again).toMatchObject({ status: 200, body: { acquired: true } });
  });

  it('a first connection that fails is a 503 at once, not a wait; the next call tries afresh', async () => {
    await server!.down();
    // Another spelling of the same server's URL: a client of its own, which has never connected.
    const leases = new RedisLeases(`${server!.url}/0`);
    await expect(leases.acquire('never:r', 'dave', 1_000)).rejects.toBeInstanceOf(LeaseBackendUnavailableError);
    await expect(leases.live(10)).rejects.toBeInstanceOf(LeaseBackendUnavailableError);
    await server!.up();
    expect(await leases.acquire('never:r', 'dave', 1_000)).toMatchObject({ acquired: true });
  });

  it('a keyed status update answers 503 idempotency_backend_unavailable while Redis is down, and changes nothing', async () => {
    const intent = await makeIntent('RECEIVED');
    const update = (key: string) =>
      status(apiRequest(`/api/intents/${intent.id}/status`, { method: 'POST', token, body: { status: 'NORMALIZED', idempotencyKey: key } }), { params: Promise.resolve({ id: intent.id }) }).then(answer);
    // The shared client may still be reconnecting after the previous case stopped the server under it.
    expect((await onceServing(() => update('warm-up-is-not-this-one'))).status).toBe(200);
    await server!.down();
    const refused = await update('while-down');
    expect(refused).toMatchObject({ status: 503, retryAfter: '1', body: { error: { code: 'idempotency_backend_unavailable' } } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
  });
});
