import { readFileSync } from 'node:fs';
import { expect, test } from './support/test';
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
  // The API's root, with or without its slash (Next redirects the one to the other): the same, not the console's HTML 404.
  for (const path of ['/api', '/api/']) {
    const res = await request.get(path, { headers });
    expect(res.status(), path).toBe(404);
    expect(res.headers()['content-type'], path).toMatch(/^application\/json/);
    expect(await res.json()).toMatchObject({ error: { code: 'not_found', details: { path: '/api' } } });
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
 * The console's server answers the JSON API with its own router, driven by the operations table (lib/http/api-node.ts),
 * and leaves to Next what it does not take as it is; Next reaches the same router through its one catch-all route.
 * Both halves, through the real server on a real build: the server says at start how many operations it serves;
 * a command on a plain path is answered by the router itself — whole, with its length, where Next streams a route's
 * answer without one — with Next's internal routing headers ignored; what is left to Next answers as Next does.
 */
test('commands reach the console’s router directly; what is left to Next still answers as before', async ({ request }) => {
  const log = process.env.E2E_SERVER_LOG;
  test.skip(!log, 'a server started elsewhere (E2E_BASE_URL): its log is not ours to read');
  const operations = Object.values(((await (await request.get('/api/openapi.json')).json()) as { paths: Record<string, object> }).paths).reduce((n, path) => n + Object.keys(path).length, 0);
  const started = readFileSync(log!, 'utf8').match(/\[server\] JSON API: (\d+) operations on (\d+) paths served directly/);
  expect(started, 'the server says how many API operations it serves directly').not.toBeNull();
  expect(Number(started![1])).toBe(operations);

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
  // Answered by the console's router: whole, its length said.
  expect(Number(steered.headers()['content-length'])).toBe((await steered.body()).length);
  expect(steered.headers()['transfer-encoding']).toBeUndefined();

  // A trailing slash is Next's to redirect; nothing is applied.
  const slashed = await request.post(`/api/intents/${id}/status/`, { headers, data: { status: 'PROCESSED' }, maxRedirects: 0 });
  expect(slashed.status()).toBe(308);
  expect(slashed.headers()['location']).toBe(`/api/intents/${id}/status`);
  expect(await (await request.get(`/api/intents/${id}`, { headers })).json()).toMatchObject({ status: 'NORMALIZED' });

  // A percent-escaped path goes through Next, which decodes it and hands it to the same router through its
  // catch-all route: the same answer, streamed by Next without a length.
  const escaped = `/api/intents/%${id.charCodeAt(0).toString(16)}${id.slice(1)}/status`;
  const viaNext = await request.post(escaped, { headers, data: { status: 'PROCESSED' } });
  expect(viaNext.status(), await viaNext.text()).toBe(200);
  expect(await viaNext.json()).toMatchObject({ intent: { id, status: 'PROCESSED' } });
  expect(viaNext.headers()['content-length']).toBeUndefined();

  // Bad input on the direct path: a 400 naming the field, as from every door.
  const bad = await request.post(`/api/intents/${id}/status`, { headers, data: { status: 'SIDEWAYS' } });
  expect(bad.status()).toBe(400);
  expect(await bad.json()).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field: 'status' }] } } });
});

/** Reads are answered by the same router, and compressed as Next compressed them. */
test('reads are served directly too, compressed for clients that take gzip', async ({ request }) => {
  const { authorization } = await apiTokenFor(['viewer']);
  const list = await request.get('/api/intents?limit=50', { headers: { authorization, 'accept-encoding': 'gzip' } });
  expect(list.status()).toBe(200);
  expect(list.headers()['vary']).toBe('Accept-Encoding');
  const document = await request.get('/api/openapi.json', { headers: { 'accept-encoding': 'gzip' } });
  expect(document.headers()['content-encoding']).toBe('gzip');
  expect(((await document.json()) as { openapi: string }).openapi).toBe('3.1.0');
});
