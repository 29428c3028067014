import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, getJson, postJson, readAfterLiveEvent, readAfterPosition, retryUnlessRefused } from './api-client';

/** A real HTTP server answering as the JSON API does: each path one answer. */
let server: Server;
let base: string;
const received: { method?: string; body: string; readAfter?: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const readAfter = req.headers['bridge-read-after'];
      received.push({ method: req.method, body, ...(typeof readAfter === 'string' ? { readAfter } : {}) });
      const send = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.url === '/ok') return send(200, { hello: 'world' });
      if (req.url === '/invalid') return send(400, { error: { code: 'invalid_request', message: 'limit must be a whole number', details: { fields: [{ field: 'limit', message: 'must be a whole number' }] } } });
      if (req.url === '/signed-out') return send(401, { error: { code: 'unauthenticated', message: 'no session' } });
      if (req.url === '/pressure') return send(503, { error: { code: 'db_under_pressure', message: 'gave up within its timeouts' } });
      res.writeHead(502).end('<html>bad gateway</html>');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const failure = (p: Promise<unknown>) => p.then(() => expect.fail('expected a failure'), (e: unknown) => e as ApiError);

describe('api-client', () => {
  it('returns the JSON of a 2xx answer', async () => {
    expect(await getJson(`${base}/ok`)).toEqual({ hello: 'world' });
  });

  it('turns the error envelope into an ApiError with its code, status, message and field details', async () => {
    const e = await failure(getJson(`${base}/invalid`));
    expect(e).toBeInstanceOf(ApiError);
    expect([e.status, e.code, e.message, e.isNetwork, e.isPressure]).toEqual([400, 'invalid_request', 'limit must be a whole number', false, false]);
    expect(e.fields).toEqual([{ field: 'limit', message: 'must be a whole number' }]);
    expect(retryUnlessRefused(0, e)).toBe(false);
  });

  it('says a session ended in words, and marks a database under pressure', async () => {
    const signedOut = await failure(getJson(`${base}/signed-out`));
    expect([signedOut.status, signedOut.code]).toEqual([401, 'unauthenticated']);
    expect(signedOut.message).toMatch(/session has ended/);
    const pressure = await failure(getJson(`${base}/pressure`));
    expect([pressure.code, pressure.isPressure]).toEqual(['db_under_pressure', true]);
    expect(retryUnlessRefused(0, pressure)).toBe(true);
  });

  it('keeps an answer without an envelope apart (http_error with the status)', async () => {
    const e = await failure(getJson(`${base}/gateway`));
    expect([e.status, e.code, e.fields]).toEqual([502, 'http_error', []]);
    expect(e.message).toMatch(/502/);
  });

  it('reports no answer at all as a network error, and passes an abort on untouched', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const e = await failure(getJson(`http://127.0.0.1:${port}/gone`));
    expect([e.status, e.code, e.isNetwork]).toEqual([0, 'network', true]);
    const controller = new AbortController();
    controller.abort();
    await expect(getJson(`${base}/ok`, controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('posts a JSON body', async () => {
    received.length = 0;
    await postJson(`${base}/ok`, { owner: 'me', token: 7 }, { keepalive: true });
    expect(received).toEqual([{ method: 'POST', body: '{"owner":"me","token":7}' }]);
  });

  it('sends the furthest position the live feed named as Bridge-Read-After on every read from then on, never on a command', async () => {
    received.length = 0;
    await getJson(`${base}/ok`);
    expect(received.at(-1)?.readAfter).toBeUndefined();
    readAfterLiveEvent('0/16B3748');
    await getJson(`${base}/ok`);
    expect(received.at(-1)?.readAfter).toBe('0/16B3748');
    // An older position (an event of a batch already past), or one that is not a position, lowers nothing.
    readAfterLiveEvent('0/16B0000');
    readAfterLiveEvent('not-a-position');
    readAfterLiveEvent(undefined);
    expect(readAfterPosition()).toBe('0/16B3748');
    // Compared as positions, not as text: 1/0 is past 0/FFFFFFFF.
    readAfterLiveEvent('0/FFFFFFFF');
    readAfterLiveEvent('1/0');
    await getJson(`${base}/ok`);
    expect(received.at(-1)?.readAfter).toBe('1/0');
    await postJson(`${base}/ok`, {});
    expect(received.at(-1)).toEqual({ method: 'POST', body: '{}' });
  });
});
