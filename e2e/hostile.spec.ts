import { expect, test } from '@playwright/test';
import { sessionCookieName } from '../lib/auth/cookies';
import { createSession } from '../lib/auth/sessions';
import { apiTokenFor, createE2eUser } from './auth';
import { filler, raw, type RawAnswer } from './support/raw-http';

/**
 * Hostile requests against the real server (Next behind the console's front door): what Next would answer itself,
 * before any route code, must be a 4xx in the error envelope too. The unit-level suite is test/hostile.
 */
function expectEnvelope(answer: RawAnswer | null, status: number, code?: string) {
  expect(answer, 'an answer, not a dropped connection').not.toBeNull();
  expect(answer!.status).toBe(status);
  const parsed = JSON.parse(answer!.body) as { error: { code: string; message: string } };
  if (code) expect(parsed.error.code).toBe(code);
  expect(parsed.error.message).toBeTruthy();
}

test('methods, paths and framing Next would answer itself', async ({ baseURL }) => {
  for (const path of ['/', '/api/health', '/api/intents', '/sign-in', '/intents']) expectEnvelope(await raw(baseURL!, { method: 'TRACE', path }), 405, 'method_not_allowed');
  for (const path of ['/api/intents/%FF', '/api/intents/%ED%A0%80', '/intents/%ED%BF%BF', '/%C0%AF', '/api/intents/%00', '/intents/%0d%0aX:y', '/api/intents?q=%FF']) {
    expectEnvelope(await raw(baseURL!, { path }), 400, 'invalid_request');
  }
  expectEnvelope(await raw(baseURL!, { method: 'TRACK', path: '/' }), 400, 'invalid_request');
  expectEnvelope(await raw(baseURL!, { method: 'POST', path: '/api/intents', headers: { 'content-length': 'abc' }, body: '' }), 400);
});

test('API answers: no-store, and OPTIONS agrees with the 405s', async ({ baseURL }) => {
  const { authorization } = await apiTokenFor(['viewer', 'operator']);
  const list = await raw(baseURL!, { path: '/api/intents?limit=1', headers: { authorization } });
  expect(list!.status).toBe(200);
  expect(list!.headers['cache-control']).toBe('no-store');
  for (const path of ['/api/intents', '/api/intents/bulk-status', '/api/events', '/api/health']) {
    const options = await raw(baseURL!, { method: 'OPTIONS', path });
    expect(options!.status).toBe(204);
    const allowed = String(options!.headers.allow).split(', ');
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      // GET /api/events streams: the status is all this needs, so the connection is dropped after a moment.
      const answer = await raw(baseURL!, { method, path, headers: { authorization, 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{}', abortAfterMs: 1500 });
      expect({ path, method, refused: answer!.status === 405 }, `${method} ${path} answered ${answer!.status}: ${answer!.body.slice(0, 200)}`).toEqual({ path, method, refused: !allowed.includes(method) });
    }
  }
});

test('bodies: oversized chunked and declared uploads are refused while read', async ({ baseURL }) => {
  const { authorization } = await apiTokenFor(['operator']);
  // The server answers 413 and closes once the limit is passed; the closing may reach this client before the answer
  // does (a reset while still sending). Either way the upload must have been stopped well short of its whole size.
  const total = 64 * 1024 * 1024; // far past what socket buffers can swallow after the server stops reading
  let offered = 0;
  const counted = (async function* () {
    for await (const chunk of filler(total)) {
      offered += chunk.length;
      yield chunk;
    }
  })();
  const chunked = await raw(baseURL!, { method: 'POST', path: '/api/intents', headers: { authorization, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, chunks: counted });
  if (chunked) expectEnvelope(chunked, 413, 'payload_too_large');
  else expect(offered, 'the connection was cut while the body was still being sent').toBeLessThan(total);
  const declared = await raw(baseURL!, { method: 'POST', path: '/api/intents', headers: { authorization, 'content-type': 'application/json', 'content-length': String(600 * 1024 * 1024) }, body: '{' });
  expectEnvelope(declared, 413, 'payload_too_large');
});

test('server actions: a foreign or missing Origin with a cookie is refused in the envelope, not a 500', async ({ baseURL }) => {
  const user = await createE2eUser(['admin']);
  const { secret } = await createSession(user.userId, { userAgent: 'playwright' });
  const cookie = `${sessionCookieName()}=${secret}`;
  const host = new URL(baseURL!).host;
  const action = { 'next-action': '00'.repeat(21), 'content-type': 'text/plain;charset=UTF-8', cookie, host };
  for (const origin of ['https://evil.example', 'http://[::', 'null', `http://${host}.evil.example`]) {
    expectEnvelope(await raw(baseURL!, { method: 'POST', path: '/admin/users', headers: { ...action, origin }, body: '[]' }), 403, 'csrf_rejected');
  }
  expectEnvelope(await raw(baseURL!, { method: 'POST', path: '/admin/users', headers: action, body: '[]' }), 403, 'csrf_rejected');
  // From the console's own origin, an unknown action id is Next's business: a 4xx, never a 5xx.
  const own = await raw(baseURL!, { method: 'POST', path: '/admin/users', headers: { ...action, origin: `http://${host}` }, body: '[]' });
  expect(own!.status).toBeGreaterThanOrEqual(400);
  expect(own!.status).toBeLessThan(500);
});
