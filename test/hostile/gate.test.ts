import { request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { createGatedServer, MAX_BODY_BYTES, SECURITY_HEADERS } from '@/lib/http/gate';

/**
 * The front door (lib/http/gate.ts) in front of a stand-in for Next: every hostile request below must be answered
 * with a 4xx in the error envelope by the gate itself, and must never reach the handler behind it. Well-formed
 * requests must pass through untouched. Raw sockets are used where fetch would clean the request up first.
 */
let server: Server;
let base: { host: string; port: number };
const reached: string[] = [];

/** The bodies the stand-in read, in order: what Next would have decoded. */
const bodies: string[] = [];

beforeAll(async () => {
  const options = { trustedOrigins: ['https://console.example.com'] };
  // As the console's server (scripts/serve.ts) does, with a stand-in for Next that reads the body.
  const pass = (req: IncomingMessage, res: ServerResponse) => {
    reached.push(`${req.method} ${req.url}`);
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      bodies.push(body);
      res.end('passed');
    });
  };
  server = createGatedServer(options, pass, (_req, res, err) => res.destroy(err as Error));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = { host: '127.0.0.1', port: (server.address() as AddressInfo).port };
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

// Each test asserts on what its own requests reached, so it starts from empty lists whatever ran before it.
beforeEach(() => {
  reached.length = 0;
  bodies.length = 0;
});

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

/** Raw bytes in, every byte the server wrote until it closed the connection out (requests here say Connection: close). */
function rawExchange(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(base.port, base.host, () => socket.write(text));
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (out += d));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
  });
}

/** The status and envelope of a raw answer (one response; a 100 Continue in front of it is the caller's concern). */
function rawEnvelope(out: string): { status: number; code: string; message: string } {
  const last = out.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(last)?.[1]);
  expect(last).toMatch(/\r\nContent-Type: application\/json/i);
  const { error } = JSON.parse(last.slice(last.indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string } };
  return { status, code: error.code, message: error.message };
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

  it('refuses server action bodies that refer to parts a text body cannot have, before anything decodes them', async () => {
    const action = { 'next-action': '7f00ff', 'content-type': 'text/plain;charset=UTF-8' };
    const hostile = [
      '[{"paused":"$F1"}]',
      '["$Q1"]',
      '["$B1"]',
      '["$1"]',
      '["$S"]',
      '["$O1"]',
      '["$@1"]',
      '["$h0"]',
      '["$K1"]',
      '["$W1"]',
      '["$i1"]',
      '["$R1"]',
      '["$x1"]',
      '["$A1"]',
      '["$n12x"]',
      '["$"]',
      '"$0"',
      '[{"a":[{"b":[[["$2"]]]}]}]',
      // Paths back into the body that lead nowhere React would follow.
      '[{"a":1},"$0:5"]',
      '[{"a":{"b":1}},"$0:0:a:c"]',
      '["x","$0:0:length"]',
      '[{"a":1},"$0:0:__proto__"]',
      '[{"a":1},"$0:"]',
      '[{"a":1},"$1:0"]',
      `${'['.repeat(5000)}"$1"${']'.repeat(5000)}`,
      'not json',
      '',
    ];
    for (const body of hostile) {
      // No cookie and no Origin (a script's call, which the Origin check lets through), then the same from the console's own page.
      for (const headers of [action, { ...action, origin: `http://127.0.0.1:${base.port}`, cookie: 'bc_session=x' }]) {
        const answer = await send('POST', '/workers', headers, body);
        expect({ body: body.slice(0, 40), status: answer.status }).toEqual({ body: body.slice(0, 40), status: 400 });
        expectRefused(answer, 400, 'invalid_request');
        expect(JSON.parse(answer.body).error.details).toEqual({ fields: [{ field: 'body', message: expect.any(String) }] });
      }
    }
    // More values than React decodes (it counts array slots and the characters of their strings): a 413, not its 500.
    expectRefused(await send('POST', '/workers', action, JSON.stringify([['a'.repeat(520_000)], ['b'.repeat(520_000)]])), 413, 'payload_too_large');
    expect(reached).toEqual([]);
  });

  it('refuses multipart action bodies React cannot decode: malformed, without part 0, or referring to parts they lack', async () => {
    const part = (name: string, value: string, file = false) =>
      `--zz\r\nContent-Disposition: form-data; name="${name}"${file ? '; filename="a.txt"\r\nContent-Type: text/plain' : ''}\r\n\r\n${value}\r\n`;
    const multipart = { 'next-action': '7f00ff', 'content-type': 'multipart/form-data; boundary=zz' };
    const hostile = [
      // A form a browser would post to a page, sent as an action call: no arguments in part 0 (React: "Connection closed.").
      `${part('username', 'x')}--zz--\r\n`,
      // Not multipart at all, or cut before its end (busboy: "Unexpected end of form").
      'username=x',
      `${part('0', '[]')}`,
      '--zz\r\nContent-Disposition: form-data; name="0"\r\n\r\n[]',
      '',
      // Part 0 is not JSON, or is a file.
      `${part('0', '{"paused":')}--zz--\r\n`,
      `${part('0', '[]', true)}--zz--\r\n`,
      // References to parts the body does not have, or of the wrong kind.
      `${part('0', '["$1"]')}--zz--\r\n`,
      `${part('0', '["$Q2"]')}${part('1', '[]')}--zz--\r\n`,
      `${part('0', '["$B1"]')}${part('1', 'text, not a file')}--zz--\r\n`,
      `${part('0', '["$a"]')}${part('a', '[]')}--zz--\r\n`,
      `${part('0', '["$1:x"]')}${part('1', '{"y":1}')}--zz--\r\n`,
      `${part('0', '["$1"]')}${part('1', '["$2"]')}--zz--\r\n`,
      `${part('0', '["$K1:x"]')}--zz--\r\n`,
      // Kinds the console's pages never send: a server reference, a stream, a typed array.
      `${part('0', '["$h1"]')}${part('1', '{"id":"x","bound":null}')}--zz--\r\n`,
      `${part('0', '["$R1"]')}${part('1', '[]')}--zz--\r\n`,
      `${part('0', '["$A1"]')}${part('1', '[]')}--zz--\r\n`,
    ];
    for (const body of hostile) {
      const answer = await send('POST', '/workers', multipart, body);
      expect({ body: body.slice(0, 60), status: answer.status }).toEqual({ body: body.slice(0, 60), status: 400 });
      expectRefused(answer, 400, 'invalid_request');
      expect(JSON.parse(answer.body).error.details).toEqual({ fields: [{ field: 'body', message: expect.any(String) }] });
    }
    expect(reached).toEqual([]);
    // What React's client writes: parts referred to by their number in hexadecimal, a path into one, a file, a FormData.
    const fine = [
      `${part('0', '["$1","$b:k"]')}${part('1', '{"a":1}')}${part('11', '{"k":[2]}')}--zz--\r\n`,
      `${part('0', '[{"f":"$B1","m":"$Q2"}]')}${part('1', 'hello', true)}${part('2', '[["k","v"]]')}--zz--\r\n`,
      `${part('0', '["$K1"]')}${part('_1_paused', 'true')}${part('_1_note', 'café ✓')}--zz--\r\n`,
    ];
    for (const body of fine) expect((await send('POST', '/workers', multipart, body)).status).toBe(200);
    expect(bodies).toEqual(fine);
  });

  it('hands a text action body it screened on to Next byte for byte, however it arrived', async () => {
    const action = { 'next-action': '7f00ff', 'content-type': 'text/plain;charset=UTF-8' };
    // What React's client writes for values that need no other part: a "$"-string, undefined, dates, numbers, a BigInt.
    const inline = JSON.stringify([{ paused: true, note: '$$5 off — café ✓', at: '$D2026-11-27T10:00:00.000Z', gone: '$undefined', n: '$n12345', x: ['$NaN', '$-0', '$Infinity', '$-Infinity'], fn: '$T' }]);
    const big = JSON.stringify([{ text: 'ü'.repeat(200_000) }]);
    expect((await send('POST', '/workers', action, inline)).status).toBe(200);
    // An object passed twice: React writes the second as a path back to the first, inside the same body.
    const twice = JSON.stringify([{ diff: { items: [{ qty: 2 }] }, before: { items: ['$0:0:diff:items:0'] } }]);
    expect((await send('POST', '/workers', action, twice)).status).toBe(200);
    // In many small writes: the screen must wait for the whole declared length.
    const pieces = () =>
      (async function* () {
        const bytes = Buffer.from(big);
        for (let i = 0; i < bytes.length; i += 4096) yield bytes.subarray(i, i + 4096);
      })();
    expect((await send('POST', '/workers', { ...action, 'content-length': String(Buffer.byteLength(big)) }, pieces)).status).toBe(200);
    // Multipart, React's other encoding (a FormData argument: its fields named 1_…), is screened and handed on too.
    const multipart = await send('POST', '/workers', { 'next-action': '7f00ff', 'content-type': 'multipart/form-data; boundary=x' }, '--x\r\nContent-Disposition: form-data; name="0"\r\n\r\n["$K1"]\r\n--x--\r\n');
    expect(multipart.status).toBe(200);
    expect(bodies).toEqual([inline, twice, big, '--x\r\nContent-Disposition: form-data; name="0"\r\n\r\n["$K1"]\r\n--x--\r\n']);
    expect(reached).toHaveLength(4);
  });

  it('answers what Node would drop or answer bare (Upgrade, CONNECT, no Host, an unknown Expect) in the envelope', async () => {
    for (const upgrade of ['websocket', 'WebSocket', 'h2c', 'foo/1']) {
      const out = await rawExchange(`GET /api/events HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: ${upgrade}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
      expect(rawEnvelope(out)).toMatchObject({ status: 400, code: 'upgrade_not_supported' });
    }
    for (const target of ['example.com:443', '127.0.0.1:5432', '/']) {
      const out = await rawExchange(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      expect(rawEnvelope(out)).toMatchObject({ status: 405, code: 'method_not_allowed' });
      expect(out).toMatch(/\r\nAllow: GET, HEAD, POST/);
    }
    for (const request of ['GET /api/health HTTP/1.1\r\nConnection: close\r\n\r\n', 'POST /api/intents HTTP/1.1\r\nHost:\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}']) {
      const out = await rawExchange(request);
      expect(rawEnvelope(out)).toMatchObject({ status: 400, code: 'invalid_request' });
      expect(out).toContain('"field":"host"');
    }
    for (const expectation of ['200-ok', '100-continue, 200-ok', 'foo']) {
      const out = await rawExchange(`POST /api/intents HTTP/1.1\r\nHost: x\r\nExpect: ${expectation}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
      expect(rawEnvelope(out)).toMatchObject({ status: 417, code: 'expectation_failed' });
    }
    expect(reached).toEqual([]);
    // HTTP/1.0 has no Host requirement, and a 1.0 request without one goes through.
    expect(await rawExchange('GET /api/health HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.1 200/);
    expect(reached).toEqual(['GET /api/health']);
  });

  it('says 100 Continue only to a request it lets through: an oversized or foreign one gets its 4xx alone', async () => {
    const refusedCases: [string, number, string][] = [
      [`POST /api/intents HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n`, 413, 'payload_too_large'],
      [`POST /intents HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: ${MAX_BODY_BYTES + 1}\r\nNext-Action: 7f00ff\r\n\r\n`, 413, 'payload_too_large'],
      ['POST /intents HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\nNext-Action: 7f00ff\r\nOrigin: https://evil.example\r\n\r\n', 403, 'csrf_rejected'],
      ['TRACE / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n', 405, 'method_not_allowed'],
    ];
    for (const [request, status, code] of refusedCases) {
      // The body is never sent: the client waits for the go-ahead, and the refusal closes the connection.
      const out = await rawExchange(request);
      expect(out).not.toContain('100 Continue');
      expect(rawEnvelope(out)).toMatchObject({ status, code });
    }
    expect(reached).toEqual([]);
    // A request the gate admits is told to continue, then answered; a screened action body too.
    const admittedCases = [
      'POST /api/intents HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n',
      'POST /workers HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nNext-Action: 7f00ff\r\nContent-Length: 2\r\nConnection: close\r\n\r\n',
    ];
    for (const request of admittedCases) {
      const out = await new Promise<string>((resolve, reject) => {
        const socket = connect(base.port, base.host, () => socket.write(request));
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (d: string) => {
          text += d;
          // The body goes once the go-ahead arrived, as a client that honours Expect sends it.
          if (text === 'HTTP/1.1 100 Continue\r\n\r\n') socket.write('[]');
        });
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
      expect(out).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    }
    expect(reached).toEqual(['POST /api/intents', 'POST /workers']);
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
});
