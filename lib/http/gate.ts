import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The console's front door, run by its server (scripts/serve.ts) on every request before Next.js sees it. Next answers
 * some malformed requests itself, before any of our code runs, and answers several of them with a 500 or buffers
 * what it should refuse: an unknown method (TRACE), a path whose percent-encoding does not decode, a server action
 * whose Origin is not a URL or not ours, a body declared larger than we accept. Each gets a 4xx in the API's error
 * envelope here instead, and the request goes no further.
 *
 * Pure Node (no Next, no database): it is unit-tested with a bare http server, and its cost per request is a few
 * string checks.
 */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Every method some door of the console answers; anything else (TRACE, CONNECT, PROPFIND, …) is refused here. */
export const KNOWN_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const KNOWN = new Set<string>(KNOWN_METHODS);

export type GateOptions = {
  /** Origins (scheme://host[:port]) besides the Host the request was sent to, allowed to call server actions. */
  trustedOrigins?: string[];
  /** Behind a proxy that sets X-Forwarded-Host/-Proto, those name the console's own origin too. */
  trustProxy?: boolean;
  maxBodyBytes?: number;
};

export type Refusal = { status: number; code: string; message: string; details?: unknown; headers?: Record<string, string> };

const CONTROL = /[\u0000-\u001f\u007f]/;

/** The path's percent-encoding must decode to well-formed UTF-8 without control characters. */
function checkPath(rawUrl: string): Refusal | null {
  if (!rawUrl.startsWith('/')) {
    return { status: 400, code: 'invalid_request', message: 'The request target must be a path starting with "/".', details: { field: 'path' } };
  }
  const q = rawUrl.indexOf('?');
  const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return {
      status: 400,
      code: 'invalid_request',
      message: 'The path is not valid percent-encoded UTF-8 (a stray "%" or an encoded byte sequence that is not a character).',
      details: { field: 'path' },
    };
  }
  if (CONTROL.test(decoded)) {
    return { status: 400, code: 'invalid_request', message: 'The path must not contain control characters (encoded or not).', details: { field: 'path' } };
  }
  if (q >= 0) {
    // The query is decoded leniently by URLSearchParams, but a malformed escape there is still not something a page
    // of ours produced; refusing it keeps every reader of the query (Next's searchParams too) on well-formed text.
    try {
      decodeURIComponent(rawUrl.slice(q + 1).replace(/\+/g, ' '));
    } catch {
      return { status: 400, code: 'invalid_request', message: 'The query string is not valid percent-encoded UTF-8.', details: { field: 'query' } };
    }
  }
  return null;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The origins this console answers as: the Host it was sent to (and the forwarded one behind a trusted proxy), plus configured ones. */
function ownOrigins(req: IncomingMessage, options: GateOptions): Set<string> {
  const origins = new Set((options.trustedOrigins ?? []).map((o) => o.replace(/\/+$/, '').toLowerCase()));
  const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true;
  const host = header(req, 'host');
  if (host) {
    origins.add(`http://${host}`.toLowerCase());
    if (encrypted) origins.add(`https://${host}`.toLowerCase());
  }
  if (options.trustProxy) {
    const fHost = header(req, 'x-forwarded-host')?.split(',')[0]?.trim();
    const fProto = header(req, 'x-forwarded-proto')?.split(',')[0]?.trim() ?? (encrypted ? 'https' : 'http');
    if (fHost) origins.add(`${fProto}://${fHost}`.toLowerCase());
  }
  return origins;
}

/**
 * A server action (a POST carrying `Next-Action`) is a write with the session cookie: it must say where it came
 * from, and that must be this console. Next itself lets a call without Origin through, and answers a foreign or
 * unparsable Origin with a 500.
 */
function checkServerAction(req: IncomingMessage, options: GateOptions): Refusal | null {
  if (req.method !== 'POST' || header(req, 'next-action') === undefined) return null;
  // Next checks an action body's size while reading, but answers an overflow with a 500; browsers always send a
  // length with an action, so a body without one is refused before it is read — whoever sends it, signed in or not.
  if (header(req, 'content-length') === undefined && header(req, 'transfer-encoding') !== undefined) {
    return { status: 411, code: 'length_required', message: 'A server action must declare its body size (Content-Length).', details: { field: 'body' } };
  }
  const origin = header(req, 'origin');
  if (origin === undefined) {
    if (header(req, 'cookie') === undefined) return null;
    return { status: 403, code: 'csrf_rejected', message: 'Refused: a signed-in server action needs an Origin header from the browser.', details: { field: 'origin' } };
  }
  let parsed: URL | null = null;
  try {
    parsed = new URL(origin);
  } catch {
    parsed = null;
  }
  if (!parsed || origin === 'null' || !ownOrigins(req, options).has(parsed.origin.toLowerCase())) {
    return { status: 403, code: 'csrf_rejected', message: 'Refused: this server action did not come from the console’s own pages (its Origin is not this console’s).', details: { field: 'origin' } };
  }
  return null;
}

function checkDeclaredLength(req: IncomingMessage, max: number): Refusal | null {
  const declared = header(req, 'content-length');
  if (declared === undefined) return null;
  if (!/^[0-9]{1,15}$/.test(declared.trim())) {
    return { status: 400, code: 'invalid_request', message: 'Content-Length must be a whole number of bytes.', details: { field: 'content-length' } };
  }
  if (Number(declared) > max) {
    return { status: 413, code: 'payload_too_large', message: `The request body is larger than ${max / 1024} KiB.`, details: { field: 'body', maxBytes: max } };
  }
  return null;
}

/** What the gate says about a request: null to let it through, or the refusal to answer with. */
export function screen(req: IncomingMessage, options: GateOptions = {}): Refusal | null {
  const method = (req.method ?? '').toUpperCase();
  if (!KNOWN.has(method)) {
    return {
      status: 405,
      code: 'method_not_allowed',
      message: `${method || 'This method'} is not supported by this console; it answers ${KNOWN_METHODS.join(', ')} (each route names its own).`,
      details: { method, allowed: KNOWN_METHODS },
      headers: { Allow: KNOWN_METHODS.join(', ') },
    };
  }
  return checkPath(req.url ?? '') ?? checkDeclaredLength(req, options.maxBodyBytes ?? MAX_BODY_BYTES) ?? checkServerAction(req, options);
}

/** Answers a refusal in the error envelope, closing the connection when a body may still be on its way. */
export function refuse(req: IncomingMessage, res: ServerResponse, refusal: Refusal): void {
  const body = JSON.stringify({ error: { code: refusal.code, message: refusal.message, ...(refusal.details === undefined ? {} : { details: refusal.details }) } });
  const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  res.writeHead(refusal.status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...(hasBody ? { Connection: 'close' } : {}),
    ...refusal.headers,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  // An unread body would otherwise be drained byte by byte; closing is cheaper than reading 600 MB to discard it.
  if (hasBody) res.once('finish', () => req.socket.destroySoon?.());
}

/**
 * Security headers of every response (docs/AUTH.md), set here before Next sees the request. Set in next.config's
 * `headers()` instead, Next matched and compiled each of them as a route template on every request, a measurable
 * share of a small API request's CPU. Next's App Router inlines small bootstrap scripts, so without per-request
 * nonces (which would force every page to render dynamically) script-src needs 'unsafe-inline'; everything else is
 * locked to this origin. The console's server always serves a production build.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** The headers every answer carries; API answers (intents, users' names, audit trails) are kept by no cache. */
export function setResponseHeaders(req: IncomingMessage, res: ServerResponse): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
  if ((req.url ?? '').startsWith('/api/')) res.setHeader('Cache-Control', 'no-store');
}

/**
 * The answer to an API write (a command: POST, PUT, PATCH, DELETE under /api/) is one intent or a short error, a
 * few hundred bytes. Next compresses every response whose length it does not know, which for these answers cost
 * more CPU than the rest of the request (a gzip stream per answer; docs/bench/), and saves nothing worth it. So
 * such a request is handed on as if it did not accept compressed answers; reads (lists, the OpenAPI document) and
 * pages keep compression.
 */
export function answerWritesUncompressed(req: IncomingMessage): void {
  if (isApiCommand(req.method, req.url)) delete req.headers['accept-encoding'];
}

/**
 * An API command: a write (any method the gate lets through besides GET, HEAD and OPTIONS) under /api/. Its answer
 * is written uncompressed, and the console's server hands it straight to its route (lib/http/route-entries.ts).
 */
export function isApiCommand(method: string | undefined, url: string | undefined): boolean {
  if (!method || method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return false;
  return (url ?? '').startsWith('/api/');
}

/** Screens a request and answers it when refused; true when it was answered. */
export function gate(req: IncomingMessage, res: ServerResponse, options: GateOptions = {}): boolean {
  const refusal = screen(req, options);
  if (!refusal) return false;
  refuse(req, res, refusal);
  return true;
}

/**
 * What Node's own HTTP parser refuses before any handler runs (a method it does not know, a malformed header, a
 * Content-Length that is not a number): by default a bare `400 Bad Request`. The server's `clientError` listener
 * answers the same 4xx in the error envelope instead, and closes the connection, as the parser requires.
 */
export function answerClientError(err: NodeJS.ErrnoException & { bytesParsed?: number }, socket: import('node:stream').Duplex): void {
  if (!socket.writable || (err.code === 'ECONNRESET')) {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const code = status === 431 ? 'headers_too_large' : status === 408 ? 'request_timeout' : 'invalid_request';
  const message =
    status === 431 ? 'The request headers are too large.' : status === 408 ? 'The request took too long to arrive.' : 'The request is not well-formed HTTP (its method, a header or its framing).';
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
  );
}
