import { expect, test, type Page } from './support/test';
import { sessionCookieName } from '../lib/auth/cookies';
import { createSession } from '../lib/auth/sessions';
import { db } from '../lib/db/client';
import { apiTokenFor, createE2eUser, useSessionOf } from './auth';
import { filler, raw, rawSocket, type RawAnswer } from './support/raw-http';

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

/** The status and error envelope of what rawSocket read (a `100 Continue` in front of it is the caller's business). */
function socketEnvelope(out: string): { status: number; code: string; continued: boolean } {
  expect(out, 'an answer, not a dropped connection').not.toBe('');
  const continued = out.startsWith('HTTP/1.1 100 Continue\r\n\r\n');
  const answer = continued ? out.slice('HTTP/1.1 100 Continue\r\n\r\n'.length) : out;
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
  expect(answer).toMatch(/\r\ncontent-type: application\/json/i);
  const { error } = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string } };
  expect(error.message).toBeTruthy();
  return { status, code: error.code, continued };
}

test('Upgrade, CONNECT, no Host and expectations: an answer in the envelope, never silence or a bare Node answer', async ({ baseURL }) => {
  const host = new URL(baseURL!).host;
  for (const path of ['/', '/api/events', '/api/health']) {
    const ws = await rawSocket(baseURL!, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    expect(socketEnvelope(ws)).toMatchObject({ status: 400, code: 'upgrade_not_supported' });
  }
  for (const target of ['example.com:443', `${host}`]) {
    expect(socketEnvelope(await rawSocket(baseURL!, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`))).toMatchObject({ status: 405, code: 'method_not_allowed' });
  }
  for (const request of ['GET /api/health HTTP/1.1\r\nConnection: close\r\n\r\n', 'GET /intents HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n']) {
    expect(socketEnvelope(await rawSocket(baseURL!, request))).toMatchObject({ status: 400, code: 'invalid_request' });
  }
  for (const expectation of ['200-ok', '100-continue, 200-ok']) {
    const out = await rawSocket(baseURL!, `POST /api/intents HTTP/1.1\r\nHost: ${host}\r\nExpect: ${expectation}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
    expect(socketEnvelope(out)).toMatchObject({ status: 417, code: 'expectation_failed', continued: false });
  }
  // A 10 MiB upload announced with Expect: 100-continue is refused without the go-ahead (its body is never sent).
  const big = await rawSocket(baseURL!, `POST /api/intents HTTP/1.1\r\nHost: ${host}\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n`);
  expect(socketEnvelope(big)).toEqual({ status: 413, code: 'payload_too_large', continued: false });
  // The server still answers ordinary requests afterwards.
  expect((await raw(baseURL!, { path: '/api/health' }))!.status).toBe(200);
});

/**
 * The id of the server action a page calls when `act` is done on it, read from the call itself, which is stopped on
 * its way out (so it changes nothing).
 */
async function actionIdOf(page: Page, path: string, act: () => Promise<void>): Promise<string> {
  let actionId: string | undefined;
  await page.route(`**${path}**`, async (route) => {
    const id = route.request().headers()['next-action'];
    if (id) {
      actionId = id;
      await route.abort();
    } else await route.continue();
  });
  await page.goto(path);
  await act();
  await expect.poll(() => actionId).toBeTruthy();
  return actionId!;
}

test('server actions: React reference markers in a text body are refused before React decodes them, and change nothing', async ({ page, context, baseURL }) => {
  const user = await useSessionOf(context, baseURL!, ['operator']);
  // The real id of setWorkersPausedAction, taken from the Workers page's own call.
  const actionId = await actionIdOf(page, '/workers', async () => {
    await page.getByRole('button', { name: /^(Pause|Resume) claiming$/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: /^(Pause|Resume) claiming$/ }).click();
  });

  const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const host = new URL(baseURL!).host;
  const bare = { 'next-action': actionId, 'content-type': 'text/plain;charset=UTF-8' };
  const signedIn = { ...bare, cookie, origin: `http://${host}` };
  const bodies = ['[{"paused":"$F1"}]', '[{"paused":"$Q1"}]', '[{"paused":"$B1"}]', '[{"paused":"$1"}]', '["$S"]', '[{"paused":"$O1"}]', '["$@0"]', '["$K1"]', '[{"paused":"$h1"}]', '["$R1"]', '["$n1x"]', '{"paused":', ''];
  for (const body of bodies) {
    for (const headers of [bare, signedIn]) {
      const answer = await raw(baseURL!, { method: 'POST', path: '/workers', headers, body });
      expect({ body, status: answer?.status }).toEqual({ body, status: 400 });
      expectEnvelope(answer, 400, 'invalid_request');
    }
  }
  // Nothing reached the action: no pause or resume by this user.
  const changes = await db().auditEvent.count({ where: { actor: user.username, action: { in: ['workers_paused', 'workers_resumed'] } } });
  expect(changes).toBe(0);
  // A body the page could have sent still reaches the action, which refuses the value itself (200, an error result).
  const lax = await raw(baseURL!, { method: 'POST', path: '/workers', headers: { ...signedIn, accept: 'text/x-component' }, body: '[{"paused":"$$yes"}]' });
  expect(lax!.status).toBe(200);
  expect(lax!.body).toContain('invalid_request');
});

test('server actions: a multipart body React cannot decode is a 400, signed in or not, on any page', async ({ page, baseURL }) => {
  // The sign-in form's own action id, taken from its own call.
  const actionId = await actionIdOf(page, '/sign-in', async () => {
    await page.getByLabel('Username').fill('nobody');
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
  });
  const host = new URL(baseURL!).host;
  const multipart = { 'next-action': actionId, 'content-type': 'multipart/form-data; boundary=zz', origin: `http://${host}` };
  const bodies = [
    // A browser's form fields sent as an action call: no arguments in part 0 (React answered "Connection closed.").
    '--zz\r\nContent-Disposition: form-data; name="username"\r\n\r\nx\r\n--zz--\r\n',
    // Declared multipart, and not (busboy answered "Unexpected end of form").
    'username=x&password=y',
    // A reference to a part the body does not have.
    '--zz\r\nContent-Disposition: form-data; name="0"\r\n\r\n["$1"]\r\n--zz--\r\n',
  ];
  for (const path of ['/sign-in', '/intents']) {
    for (const body of bodies) {
      const answer = await raw(baseURL!, { method: 'POST', path, headers: multipart, body });
      expect({ path, body: body.slice(0, 40), status: answer?.status }).toEqual({ path, body: body.slice(0, 40), status: 400 });
      expectEnvelope(answer, 400, 'invalid_request');
    }
  }
});

test('the audit page and the API agree on text they cannot search for; Swagger UI assets are a plain 404 beyond its files', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  const pageAnswer = await page.goto('/audit?actor=%00');
  expect(pageAnswer!.status()).toBe(200);
  await expect(page.getByText(/must not contain NUL characters/)).toBeVisible();
  const { authorization } = await apiTokenFor(['viewer']);
  expectEnvelope(await raw(baseURL!, { path: '/api/audit?actor=%00', headers: { authorization } }), 400, 'invalid_request');
  for (const file of ['__proto__', 'constructor', 'toString']) {
    const answer = await raw(baseURL!, { path: `/api-docs/assets/${file}` });
    expect({ file, status: answer!.status, body: answer!.body }).toEqual({ file, status: 404, body: 'Not found' });
  }
});
