import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerClientError, answerWritesUncompressed, gate, MAX_BODY_BYTES, SECURITY_HEADERS, setResponseHeaders } from '@/lib/http/gate';

/**
 * The front door (lib/http/gate.ts) in front of a stand-in for Next: every hostile request below must be answered
 * with a 4xx in the error envelope by the gate itself, and must never reach the handler behind it. Well-formed
 * requests must pass through untouched. Raw sockets are used where fetch would clean the request up first.
 */
let server: Server;
let base: { host: string; port: number };
const reached: string[] = [];
/** The Accept-Encoding each request that got through was handed on with. */
const encodings: (string | undefined)[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    // As the console's server (scripts/serve.ts) does.
    setResponseHeaders(req, res);
    if (gate(req, res, { trustedOrigins: ['https://console.example.com'] })) return;
    answerWritesUncompressed(req);
    reached.push(`${req.method} ${req.url}`);
    encodings.push(req.headers['accept-encoding']);
    req.resume();
    req.on('end', () => res.end('passed'));
  });
  server.on('clientError', answerClientError);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = { host: '127.0.0.1', port: (server.address() as AddressInfo).port };
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

type Answer = { status: number; body: string; headers: Record<string, string | string[] | undefined> };

function send(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer | (() => AsyncIterable<Buffer>)): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ ...base, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', (err) => reject(err));
    if (typeof body === 'function') {
      void (async () => {
        try {
          for await (const chunk of body()) if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
          req.end();
        } catch {
          // the server closed the connection on us: expected for refused uploads
        }
      })();
    } else req.end(body);
  });
}

function expectRefused(answer: Answer, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const parsed = JSON.parse(answer.body) as { error: { code: string; message: string } };
  expect(parsed.error.code).toBe(code);
  expect(parsed.error.message.length).toBeGreaterThan(10);
}

describe('the front door', () => {
  it('refuses methods no door answers (TRACE and friends) with 405 and Allow', async () => {
    for (const method of ['TRACE', 'PROPFIND', 'MKCOL', 'LOCK', 'PURGE', 'SEARCH', 'UNLOCK']) {
      for (const path of ['/', '/api/health', '/api/intents', '/sign-in']) {
        const answer = await send(method, path);
        expectRefused(answer, 405, 'method_not_allowed');
        expect(String(answer.headers.allow)).toContain('GET');
      }
    }
    // Methods Node's parser does not even know (TRACK, BREW) are answered by the clientError listener: 400, same envelope.
    for (const method of ['TRACK', 'BREW']) expectRefused(await send(method, '/api/intents'), 400, 'invalid_request');
    expect(reached).toEqual([]);
  });

  it('refuses paths whose percent-encoding does not decode, lone surrogates and control characters', async () => {
    const paths = [
      '/api/intents/%FF',
      '/api/intents/%ED%A0%80', // an encoded lone surrogate (not UTF-8)
      '/api/intents/%ED%BF%BF/status',
      '/%C0%AF',
      '/api/%E0%A4%A',
      '/intents/%',
      '/api/intents/%00',
      '/sign-in%0d%0aSet-Cookie:x=1',
      '/api/intents/%1b[31m',
      '/api/intents?q=%FF%FE',
      '/intents?cursor=%E0%80',
    ];
    for (const path of paths) expectRefused(await send('GET', path), 400, 'invalid_request');
    for (const path of paths.slice(0, 3)) expectRefused(await send('POST', path, { 'content-type': 'application/json' }, '{}'), 400, 'invalid_request');
    expect(reached).toEqual([]);
  });

  it('refuses a declared body over the limit before reading it, whatever the route', async () => {
    for (const path of ['/api/intents', '/api/intents/bulk-status', '/', '/sign-in']) {
      // Only the first bytes are sent: the answer must come without the rest of the declared body.
      const req = new Promise<Answer>((resolve, reject) => {
        const r = httpRequest({ ...base, method: 'POST', path, agent: false, headers: { 'content-type': 'application/json', 'content-length': String(600 * MAX_BODY_BYTES) } }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: text, headers: res.headers }));
        });
        r.on('error', reject);
        r.write('{"payload":');
      });
      expectRefused(await req, 413, 'payload_too_large');
    }
    expectRefused(await send('POST', '/api/intents', { 'content-length': '1e9' }, ''), 400, 'invalid_request');
    expect(reached).toEqual([]);
  });

  it('refuses server actions from a foreign, unparsable or null Origin, and cookie-carrying ones without Origin', async () => {
    const action = { 'next-action': '7f00ff', 'content-type': 'text/plain;charset=UTF-8' };
    const host = `127.0.0.1:${base.port}`;
    const cases: Record<string, string>[] = [
      { ...action, origin: 'https://evil.example', cookie: 'bc_session=x' },
      { ...action, origin: 'https://evil.example' },
      { ...action, origin: `http://${host}.evil.example` },
      { ...action, origin: 'http://[::', cookie: 'bc_session=x' },
      { ...action, origin: 'not a url' },
      { ...action, origin: 'null', cookie: 'bc_session=x' },
      { ...action, cookie: 'bc_session=x' },
    ];
    for (const headers of cases) expectRefused(await send('POST', '/intents', headers, '[]'), 403, 'csrf_rejected');
    // Chunked (no length): refused before reading, since Next would answer an overflow with a 500.
    // Whoever sends it: from the console's own origin, and with no Origin and no cookie (a script's, not a browser's).
    const chunk = () => (async function* () { yield Buffer.from('[]'); })();
    expectRefused(await send('POST', '/intents', { ...action, origin: `http://${host}`, 'transfer-encoding': 'chunked' }, chunk), 411, 'length_required');
    expectRefused(await send('POST', '/intents', { ...action, 'transfer-encoding': 'chunked' }, chunk), 411, 'length_required');
    expect(reached).toEqual([]);
  });

  it('lets well-formed requests through untouched', async () => {
    const host = `127.0.0.1:${base.port}`;
    const ok = [
      await send('GET', '/api/intents?q=caf%C3%A9&limit=5'),
      await send('GET', '/intents/%E2%9C%93'),
      await send('HEAD', '/api/health'),
      await send('OPTIONS', '/api/intents'),
      await send('POST', '/api/intents', { 'content-type': 'application/json' }, '{"payload":{}}'),
      await send('POST', '/intents', { 'next-action': '7f00ff', origin: `http://${host}`, cookie: 'bc_session=x' }, '[]'),
      await send('POST', '/intents', { 'next-action': '7f00ff', origin: 'https://console.example.com', cookie: 'bc_session=x' }, '[]'),
      // Without a cookie there is no ambient credential to abuse: Next's own handling applies.
      await send('POST', '/sign-in', { 'next-action': '7f00ff' }, '[]'),
    ];
    expect(ok.map((a) => a.status)).toEqual(ok.map(() => 200));
    expect(reached).toHaveLength(ok.length);
  });

  it('sets the security headers on every answer, refusals included, and no-store on the API', async () => {
    for (const answer of [await send('GET', '/intents'), await send('GET', '/api/health'), await send('TRACE', '/api/intents')]) {
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(answer.headers[name.toLowerCase()]).toBe(value);
    }
    expect((await send('GET', '/api/health')).headers['cache-control']).toBe('no-store');
    expect((await send('GET', '/intents')).headers['cache-control']).toBeUndefined();
  });

  it('hands API writes on without Accept-Encoding (their answers are small), reads and pages with it', async () => {
    encodings.length = 0;
    const gzip = { 'accept-encoding': 'gzip, deflate' };
    await send('POST', '/api/intents', { ...gzip, 'content-type': 'application/json' }, '{}');
    await send('GET', '/api/intents', gzip);
    await send('POST', '/sign-in', { ...gzip, 'content-type': 'application/x-www-form-urlencoded' }, 'a=b');
    expect(encodings).toEqual([undefined, 'gzip, deflate', 'gzip, deflate']);
  });
});
