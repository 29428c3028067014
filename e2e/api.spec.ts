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
