import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiDoor } from '@/lib/http/api-node';
import { apiRouter, buildRoutes } from '@/lib/http/api-router';
import { createGatedServer, MAX_BODY_BYTES, SECURITY_HEADERS } from '@/lib/http/gate';
import { toErrorResponse } from '@/lib/http/respond';
import { openStreamCount } from '@/lib/live/stream';
import { OPERATIONS } from '@/lib/openapi/operations';
import { resetAuth, userWithToken } from '../auth-helpers';
import { resetDatabase } from '../helpers';

/**
 * The JSON API as the console's server answers it (scripts/serve.ts): the front door, then the API door
 * (lib/http/api-node.ts) on Node's own request and response, with a stand-in for Next behind it that records what
 * it was left. Real sockets, a real database, real tokens.
 */
let server: Server;
let port: number;
let authorization: string;
const leftToNext: string[] = [];

beforeAll(async () => {
  await resetDatabase();
  await resetAuth();
  ({ authorization } = await userWithToken(['operator', 'reviewer', 'viewer']));
  server = createGatedServer({}, (req, res) => {
    const api = door.serve(req, res);
    if (api) return api;
    leftToNext.push(`${req.method} ${req.url}`);
    res.end('next');
  }, (_req, res, err) => res.destroy(err as Error));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
  door = createApiDoor({ hostname: '127.0.0.1', port });
});
let door: ReturnType<typeof createApiDoor>;
afterAll(() => new Promise<void>((r) => server.close(() => r())));

type Answer = { status: number; headers: IncomingHttpHeaders; body: Buffer };

function send(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer[]): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (Array.isArray(body)) {
      // Chunked, one piece at a time, stopping once the server has answered.
      let i = 0;
      const next = () => {
        if (i < body.length && !req.destroyed) req.write(body[i++], next);
        else req.end();
      };
      next();
    } else req.end(body);
  });
}

const json = (answer: Answer) => JSON.parse(answer.body.toString('utf8'));

describe('the API door on the console server', () => {
  it('serves every operation of the table and says how many', () => {
    expect(door.operations).toBeGreaterThanOrEqual(30);
    expect(door.paths).toBeLessThanOrEqual(door.operations);
  });

  it('answers a command itself: its length known, uncompressed, with the front door’s headers', async () => {
    leftToNext.length = 0;
    const created = await send('POST', '/api/intents', { authorization, 'content-type': 'application/json', 'accept-encoding': 'gzip' }, JSON.stringify({ payload: { via: 'door' }, source: 'door-test' }));
    expect(created.status, created.body.toString()).toBe(201);
    expect(created.headers['content-encoding']).toBeUndefined();
    expect(Number(created.headers['content-length'])).toBe(created.body.length);
    expect(created.headers['content-type']).toMatch(/^application\/json/);
    expect(created.headers['cache-control']).toBe('no-store');
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(created.headers[name.toLowerCase()]).toBe(value);
    const intent = json(created);
    expect(created.headers.location).toBe(`/api/intents/${intent.id}`);

    const moved = await send('POST', `/api/intents/${intent.id}/status`, { authorization, 'content-type': 'application/json' }, JSON.stringify({ status: 'NORMALIZED' }));
    expect(moved.status, moved.body.toString()).toBe(200);
    expect(json(moved)).toMatchObject({ intent: { id: intent.id, status: 'NORMALIZED' } });
    expect(leftToNext).toEqual([]);
  });

  it('compresses a read of 1 KiB or more for a client that takes gzip, and only then', async () => {
    const zipped = await send('GET', '/api/openapi.json', { 'accept-encoding': 'gzip, deflate' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toBe('Accept-Encoding');
    expect(Number(zipped.headers['content-length'])).toBe(zipped.body.length);
    const document = JSON.parse(gunzipSync(zipped.body).toString('utf8'));
    expect(document.openapi).toBe('3.1.0');

    const plain = await send('GET', '/api/openapi.json', { 'accept-encoding': 'gzip;q=0' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(json(plain)).toEqual(document);
    // A small answer is not worth a gzip stream.
    const health = await send('GET', '/api/health', { 'accept-encoding': 'gzip' });
    expect(health.headers['content-encoding']).toBeUndefined();
    expect(json(health)).toEqual({ ok: true, db: 'up' });
  });

  it('answers unknown paths, other methods, OPTIONS and HEAD in the API’s terms', async () => {
    const missing = await send('GET', '/api/nope', { authorization });
    expect(missing.status).toBe(404);
    expect(json(missing)).toMatchObject({ error: { code: 'not_found', details: { path: '/api/nope' } } });
    const del = await send('DELETE', '/api/intents', { authorization });
    expect(del.status).toBe(405);
    expect(del.headers.allow).toBe('POST, GET, HEAD, OPTIONS');
    expect(json(del)).toMatchObject({ error: { code: 'method_not_allowed', details: { method: 'DELETE' } } });
    const options = await send('OPTIONS', '/api/intents/bulk-status');
    expect(options.status).toBe(204);
    expect(options.headers.allow).toBe('POST, OPTIONS');
    const head = await send('HEAD', '/api/openapi.json');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-type']).toMatch(/^application\/json/);
  });

  it('checks the caller before reading a body: no token, a 401 whatever the body', async () => {
    const answer = await send('POST', '/api/intents/bulk-status', { 'content-type': 'application/json' }, '{"not": "read"');
    expect(answer.status).toBe(401);
    expect(json(answer)).toMatchObject({ error: { code: 'unauthenticated' } });
  });

  it('refuses a chunked body past the limit with a 413 and closes the connection, and a malformed one with a 400', async () => {
    const piece = Buffer.alloc(64 * 1024, 'a');
    const pieces = Array.from({ length: MAX_BODY_BYTES / piece.length + 2 }, () => piece);
    const big = await send('POST', '/api/intents', { authorization, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, pieces);
    expect(big.status).toBe(413);
    expect(big.headers.connection).toBe('close');
    expect(json(big)).toMatchObject({ error: { code: 'payload_too_large', details: { field: 'body' } } });

    const bad = await send('POST', '/api/intents', { authorization, 'content-type': 'application/json' }, '{"payload":');
    expect(bad.status).toBe(400);
    expect(json(bad)).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field: 'body' }] } } });
  });

  it('leaves to Next every path it does not take as it is', async () => {
    leftToNext.length = 0;
    const paths = ['/api/intents/', '/api/intents//status', '/api/./intents', '/api/intents/%41/status', '/api/intents\\x', '/apis', '/api'];
    for (const path of paths) expect((await send('GET', path, { authorization })).body.toString()).toBe('next');
    expect(leftToNext).toEqual(paths.map((p) => `GET ${p}`));
  });

  it('streams events until the client goes, then ends the stream', async () => {
    const before = openStreamCount();
    const headers = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/api/events', headers: { authorization } }, (res) => {
        // The first bytes of the stream: it is open and registered.
        res.once('data', () => {
          expect(openStreamCount()).toBe(before + 1);
          resolve(res.headers);
          req.destroy();
        });
      });
      req.on('error', reject);
      req.end();
    });
    expect(headers['content-type']).toMatch(/^text\/event-stream/);
    expect(headers['content-encoding']).toBeUndefined();
    // The server learns of the departure through the socket's close: wait for the count to come back.
    await new Promise<void>((resolve) => {
      const check = () => (openStreamCount() === before ? resolve() : setImmediate(check));
      check();
    });
  });
});

describe('the router', () => {
  const router = apiRouter();
  it('prefers a literal segment to a path value, and decodes path values', () => {
    expect(router.match('/api/intents/bulk-status')?.route.template).toBe('/api/intents/bulk-status');
    expect(router.match('/api/intents/0b7f7c9e')).toMatchObject({ route: { template: '/api/intents/{id}' }, params: { id: '0b7f7c9e' } });
    expect(router.match('/api/leases/report%3A2026%2F11/acquire')).toMatchObject({ route: { template: '/api/leases/{resource}/acquire' }, params: { resource: 'report:2026/11' } });
  });

  it('matches nothing for an unknown path, an empty path value or an encoding that does not decode', () => {
    for (const path of ['/api/nope', '/api/intents//status', '/api/intents/%E0%A4%A/status', '/api/intents/x/status/more']) expect(router.match(path), path).toBeNull();
  });

  it('refuses at start a table and handlers that disagree', () => {
    const op = OPERATIONS.find((o) => o.operationId === 'getHealth')!;
    expect(() => buildRoutes([op], {})).toThrow(/no handler for the operation getHealth/);
    expect(() => buildRoutes([op], { getHealth: async () => new Response(), stray: async () => new Response() })).toThrow(/stray/);
    expect(() => buildRoutes([op], { getHealth: async (_r, _p, actor) => Response.json(actor) })).toThrow(/disagree on who may call it/);
  });
});

describe('errors of another copy of the modules', () => {
  it('answers a domain error made by another copy of its class as that error, not as a 500', async () => {
    // What a lease backend created by the build's copy of the modules throws at the server's own copy.
    class LeaseBackendUnavailableError extends Error {
      readonly code = 'lease_backend_unavailable';
      readonly httpStatus = 503;
      readonly headers = { 'Retry-After': '1' };
      toBody() {
        return { code: this.code, message: this.message };
      }
    }
    const answer = toErrorResponse(new LeaseBackendUnavailableError('The lease backend is not reachable.'));
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(await answer.json()).toEqual({ error: { code: 'lease_backend_unavailable', message: 'The lease backend is not reachable.' } });
  });
});
