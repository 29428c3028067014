import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { JsonAnswer } from './api-handlers';
import { apiRouter, type ApiRouter } from './api-router';
import { setBodySource, type BodySource } from './respond';

/**
 * The JSON API on Node's own request and response, for the console's server (scripts/serve.ts): a request under
 * /api/ is matched against the operations table (./api-router.ts) and answered by its handler, without Next's
 * router, which costs as much of the server's one JavaScript thread per request as an API command itself.
 *
 * Only plain paths are taken here: RFC 3986's path characters, no percent-escapes, backslashes, empty or dot
 * segments or trailing slash. Anything else under /api/ goes to Next, which decodes, normalises or redirects it its
 * own way and then reaches the same router through its one catch-all route (app/api/[...path]/route.ts), so every
 * answer under /api/ comes from one table whichever way it went.
 *
 * Reads are compressed here as Next compresses them (gzip, for answers of 1 KiB or more that a client accepts
 * compressed); commands' answers, a few hundred bytes, are not.
 */
const PLAIN_PATH = /^\/api(?:\/[A-Za-z0-9\-._~!$&'()*+,;=:@]+)+$/;
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;
const COMPRESS_FROM_BYTES = 1024;
const COMPRESSIBLE = /^(?:application\/(?:[\w.+-]*\+)?json|text\/(?!event-stream))/i;
const gzipAsync = promisify(gzip);

/** Where the server listens: the origin of the request URL a handler sees (the one Next's router gives it too). */
export type Listening = { hostname: string; port: number };

/** True when the client takes gzip (`Accept-Encoding: gzip`, not `gzip;q=0`). */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  for (const part of header.split(',')) {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding.trim() !== 'gzip' && coding.trim() !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

export type ApiDoor = {
  /** Paths and operations this door answers. */
  paths: number;
  operations: number;
  /** Answers the request when it is a plain /api/ path (a promise settled once answered); null when it is Next's. */
  serve: (req: IncomingMessage, res: ServerResponse) => Promise<void> | null;
};

export function createApiDoor(listening: Listening, router: ApiRouter = apiRouter()): ApiDoor {
  const host = listening.hostname.includes(':') ? `[${listening.hostname}]` : listening.hostname;
  const ignore = () => undefined;

  const serve = (req: IncomingMessage, res: ServerResponse): Promise<void> | null => {
    const url = req.url ?? '';
    if (!url.startsWith('/api/')) return null;
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (!PLAIN_PATH.test(path) || DOT_SEGMENT.test(path)) return null;
    return answer(req, res, path);
  };

  const answer = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const method = (req.method ?? 'GET').toUpperCase();
    // A body cut off by the client must not take the process down with an unhandled 'error'.
    req.on('error', ignore);
    const found = router.match(path);
    // An event stream is told when its client goes. Only it: following a signal costs a Request more than the rest
    // of its making.
    const streams = found?.route.operations.get(method === 'HEAD' ? 'GET' : method)?.op.success.contentType === 'text/event-stream';
    const closed = streams ? clientGone(res) : undefined;
    const request = new Request(`${protocolOf(req)}://${host}:${listening.port}${req.url}`, { method, headers: headersOf(req), signal: closed });
    if (method !== 'GET' && method !== 'HEAD') setBodySource(request, nodeBody(req, res));
    const answered = found ? await router.answer(request, method, found, closed) : await router.handle(request);
    await send(req, res, answered, method === 'GET' && acceptsGzip(header(req, 'accept-encoding')));
  };

  return { paths: router.routes.length, operations: router.operationCount, serve };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The scheme as Next's router reads it: TLS on the socket, or a forwarded https. */
function protocolOf(req: IncomingMessage): 'http' | 'https' {
  const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true;
  return encrypted || header(req, 'x-forwarded-proto')?.includes('https') ? 'https' : 'http';
}

function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  return headers;
}

/** A signal that fires when the client goes before its answer is finished. */
function clientGone(res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  return gone.signal;
}

/**
 * The request's body, read from Node's request when a handler asks for it: at most `max` bytes, then the rest is
 * left unread and the connection closed after the answer (reading an oversized upload only to discard it costs more).
 */
function nodeBody(req: IncomingMessage, res: ServerResponse): BodySource {
  return (max) =>
    new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (result: Uint8Array | 'too_large' | 'broken') => {
        req.off('data', data);
        req.off('end', end);
        req.off('close', closed);
        resolve(result);
      };
      const data = (chunk: Buffer) => {
        size += chunk.length;
        if (size <= max) return void chunks.push(chunk);
        req.pause();
        res.shouldKeepAlive = false;
        done('too_large');
      };
      const end = () => done(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
      const closed = () => {
        if (!req.complete) done('broken');
      };
      req.on('data', data);
      req.once('end', end);
      req.once('close', closed);
    });
}

/** Writes an answer onto Node's response: JSON and other bodies whole (with their length), event streams as they come. */
async function send(req: IncomingMessage, res: ServerResponse, answer: Response | JsonAnswer, compress: boolean): Promise<void> {
  let bytes: Buffer;
  let type: string;
  if (answer instanceof JsonAnswer) {
    res.statusCode = answer.status;
    for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
    type = 'application/json';
    res.setHeader('Content-Type', type);
    if (req.method === 'HEAD') return void res.end();
    bytes = Buffer.from(JSON.stringify(answer.body));
  } else {
    res.statusCode = answer.status;
    for (const [name, value] of answer.headers) if (name !== 'set-cookie') res.setHeader(name, value);
    const cookies = answer.headers.getSetCookie();
    if (cookies.length) res.setHeader('Set-Cookie', cookies);
    type = answer.headers.get('content-type') ?? '';
    const body = answer.body;
    if (!body || req.method === 'HEAD' || answer.status === 204 || answer.status === 304) {
      await body?.cancel().catch(() => undefined);
      return void res.end();
    }
    if (type.startsWith('text/event-stream')) return stream(res, body);
    bytes = Buffer.from(await answer.arrayBuffer());
  }
  if (req.method === 'GET' && COMPRESSIBLE.test(type) && !/no-transform/i.test(String(res.getHeader('cache-control') ?? ''))) {
    res.setHeader('Vary', 'Accept-Encoding');
    if (compress && bytes.length >= COMPRESS_FROM_BYTES) {
      bytes = await gzipAsync(bytes);
      res.setHeader('Content-Encoding', 'gzip');
    }
  }
  res.setHeader('Content-Length', bytes.length);
  res.end(bytes);
}

/** An event stream, written as it comes, at the pace the client reads it, and cancelled when the client goes. */
async function stream(res: ServerResponse, body: ReadableStream<Uint8Array>): Promise<void> {
  const reader = body.getReader();
  res.once('close', () => void reader.cancel().catch(() => undefined));
  res.flushHeaders();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise<void>((resolve) => (res.writableNeedDrain ? res.once('drain', resolve).once('close', resolve) : resolve()));
      if (res.destroyed) break;
    }
    res.end();
  } catch {
    res.destroy();
  }
}
