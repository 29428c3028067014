import { expect, test } from '@playwright/test';
import { apiTokenFor } from './auth';

/**
 * The JSON API's edges, through the real server's routing: every answer under /api is the error envelope of the
 * API's error format — a path that names no endpoint, and a method an endpoint does not take, included.
 */
test('unknown API paths and unsupported methods answer in the API error format', async ({ request }) => {
  const { authorization } = await apiTokenFor(['viewer']);
  const headers = { authorization };

  for (const path of ['/api/nope', '/api/intents/00000000-0000-4000-8000-000000000000/nope']) {
    const res = await request.get(path, { headers });
    expect(res.status(), path).toBe(404);
    expect(res.headers()['content-type']).toMatch(/^application\/json/);
    expect(await res.json()).toMatchObject({ error: { code: 'not_found', details: { path } } });
  }

  const del = await request.delete('/api/intents', { headers });
  expect(del.status()).toBe(405);
  expect(del.headers()['allow']).toBe('POST, GET, HEAD, OPTIONS');
  expect(await del.json()).toMatchObject({ error: { code: 'method_not_allowed', message: expect.stringContaining('DELETE is not supported on /api/intents') } });

  const get = await request.get('/api/intents/bulk-status', { headers });
  expect(get.status()).toBe(405);
  expect(get.headers()['allow']).toBe('POST, OPTIONS');
  expect(await get.json()).toMatchObject({ error: { code: 'method_not_allowed', details: { allowed: ['POST', 'OPTIONS'] } } });

  // The endpoints themselves still answer.
  expect((await request.get('/api/health')).status()).toBe(200);
  expect((await request.get('/api/intents?limit=1', { headers })).status()).toBe(200);
});

/**
 * The console's server hands API commands straight to their route's entrypoint (lib/http/route-entries.ts) and
 * leaves everything it is not sure of to Next's router. Both halves, through the real server: a command goes
 * through with Next's internal routing headers ignored, and what is left to Next answers as Next does.
 */
test('commands reach their route directly; what is left to Next still answers as before', async ({ request }) => {
  const { authorization } = await apiTokenFor(['operator']);
  const headers = { authorization };
  const created = await request.post('/api/intents', { headers, data: { payload: { kind: 'direct-dispatch' }, source: 'e2e-direct' } });
  expect(created.status()).toBe(201);
  const { id } = (await created.json()) as { id: string };

  // Headers only Next may set cannot steer a command elsewhere: it is applied where its path says.
  const steered = await request.post(`/api/intents/${id}/status`, {
    headers: { ...headers, 'x-middleware-rewrite': '/api/health', 'x-matched-path': '/api/health', 'x-now-route-matches': 'id=nope' },
    data: { status: 'NORMALIZED' },
  });
  expect(steered.status(), await steered.text()).toBe(200);
  expect(await steered.json()).toMatchObject({ intent: { id, status: 'NORMALIZED' } });

  // A trailing slash is Next's to redirect; nothing is applied.
  const slashed = await request.post(`/api/intents/${id}/status/`, { headers, data: { status: 'PROCESSED' }, maxRedirects: 0 });
  expect(slashed.status()).toBe(308);
  expect(slashed.headers()['location']).toBe(`/api/intents/${id}/status`);
  expect(await (await request.get(`/api/intents/${id}`, { headers })).json()).toMatchObject({ status: 'NORMALIZED' });

  // A percent-escaped path goes through Next, which decodes it to the same intent.
  const escaped = `/api/intents/%${id.charCodeAt(0).toString(16)}${id.slice(1)}/status`;
  const viaNext = await request.post(escaped, { headers, data: { status: 'PROCESSED' } });
  expect(viaNext.status(), await viaNext.text()).toBe(200);
  expect(await viaNext.json()).toMatchObject({ intent: { id, status: 'PROCESSED' } });

  // Bad input on the direct path: a 400 naming the field, as from every door.
  const bad = await request.post(`/api/intents/${id}/status`, { headers, data: { status: 'SIDEWAYS' } });
  expect(bad.status()).toBe(400);
  expect(await bad.json()).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field: 'status' }] } } });
});
