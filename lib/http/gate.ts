import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

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
  return checkHost(req) ?? checkPath(req.url ?? '') ?? checkDeclaredLength(req, options.maxBodyBytes ?? MAX_BODY_BYTES) ?? checkServerAction(req, options);
}

/**
 * HTTP/1.1 requires Host (the console's own origin is read from it); Node would answer its absence with a bare 400
 * of its own, so the server turns that check off (`requireHostHeader: false`) and it is made here instead.
 */
function checkHost(req: IncomingMessage): Refusal | null {
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) return null;
  if (header(req, 'host')?.trim()) return null;
  return { status: 400, code: 'invalid_request', message: 'An HTTP/1.1 request must name the host it is sent to (a Host header).', details: { field: 'host' } };
}

/** Answers a refusal in the error envelope, closing the connection when a body may still be on its way. */
/**
 * A refusal's JSON body, in the API's error envelope. A 400 names its field as every other 400 of the API does
 * (`details.fields`, one entry per refused field with its message), so a client reads one shape whichever door
 * refused it.
 */
function refusalBody(refusal: Refusal): string {
  const { field, ...rest } = (refusal.details ?? {}) as { field?: string };
  const details = refusal.status === 400 && typeof field === 'string' ? { ...rest, fields: [{ field, message: refusal.message }] } : refusal.details;
  return JSON.stringify({ error: { code: refusal.code, message: refusal.message, ...(details === undefined ? {} : { details }) } });
}

export function refuse(req: IncomingMessage, res: ServerResponse, refusal: Refusal): void {
  const body = refusalBody(refusal);
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

/** Screens a request and answers it when refused; true when it was answered. */
export function gate(req: IncomingMessage, res: ServerResponse, options: GateOptions = {}): boolean {
  const refusal = screen(req, options);
  if (!refusal) return false;
  refuse(req, res, refusal);
  return true;
}

/** Writes a refusal straight onto a socket (no response object exists there) and closes it. */
function refuseOnSocket(socket: import('node:stream').Duplex, refusal: Refusal): void {
  const body = refusalBody(refusal);
  const extra = Object.entries(refusal.headers ?? {}).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ''}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
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
  refuseOnSocket(socket, { status, code, message });
}

/**
 * CONNECT (a tunnel through a proxy) is handed by Node to its 'connect' listener with the bare socket, never to the
 * request handler; without a listener the connection is dropped without a word. The console is not a proxy.
 */
export function answerConnect(_req: IncomingMessage, socket: import('node:stream').Duplex): void {
  refuseOnSocket(socket, {
    status: 405,
    code: 'method_not_allowed',
    message: `CONNECT is not supported by this console (it is not a proxy); it answers ${KNOWN_METHODS.join(', ')}.`,
    details: { method: 'CONNECT', allowed: KNOWN_METHODS },
    headers: { Allow: KNOWN_METHODS.join(', ') },
  });
}

/**
 * A request asking to switch protocols (`Upgrade: websocket`): the console has no WebSocket endpoint (its live feed
 * is server-sent events, GET /api/events). Node hands such a request, with its socket, to the 'upgrade' listener
 * and nothing else; this one refuses it in the envelope instead of leaving the connection without an answer.
 */
export function answerUpgrade(req: IncomingMessage, socket: import('node:stream').Duplex): void {
  refuseOnSocket(socket, {
    status: 400,
    code: 'upgrade_not_supported',
    message: `This console does not switch protocols (asked for: ${String(header(req, 'upgrade')).slice(0, 40)}); its live feed is server-sent events at GET /api/events.`,
    details: { field: 'upgrade' },
  });
}

/**
 * `Expect: 100-continue`: the client waits for a go-ahead before sending its body. Node's 'checkContinue' listener
 * gets the request first; only a request the gate lets through is told to continue, so a refused one (a body
 * declared too large, a foreign Origin) gets its 4xx without the `100 Continue` in front of it. Returns true when
 * the request was answered.
 */
export function gateExpectingContinue(req: IncomingMessage, res: ServerResponse, options: GateOptions = {}): boolean {
  // Node sends here any Expect that mentions 100-continue ("100-continue, 200-ok" too): only that one alone is met.
  if (header(req, 'expect')?.trim().toLowerCase() !== '100-continue') {
    answerUnmetExpectation(req, res);
    return true;
  }
  if (gate(req, res, options)) return true;
  res.writeContinue();
  return false;
}

/** Any other expectation (`Expect: 200-ok`, …): HTTP defines none but 100-continue, so it cannot be met. */
export function answerUnmetExpectation(req: IncomingMessage, res: ServerResponse): void {
  refuse(req, res, {
    status: 417,
    code: 'expectation_failed',
    message: `The expectation "${String(header(req, 'expect')).slice(0, 40)}" cannot be met: the only one this console honours is 100-continue.`,
    details: { field: 'expect' },
  });
}

/**
 * React's text encoding of a server action's arguments (the body of any action call that is not multipart): JSON
 * whose strings starting with `$` are references. Most name another part of a multipart body (`$1`, `$F1`, `$Q1`,
 * `$B1`, `$K1`, typed arrays, streams, promises): in a text body no such part exists, and decoding one fails inside
 * React before the action runs (Next answers 500). The console's pages only ever send these in text, each
 * standing for one value: `$$…` (a string that starts with "$"), `$undefined`, `$NaN`, `$Infinity`, `$-Infinity`,
 * `$-0`, `$D…` (a date), `$n…` (a BigInt) and `$T` (a value the browser keeps, such as a function).
 */
const INLINE_REFERENCE = /^\$(?:\$|undefined$|NaN$|Infinity$|-Infinity$|-0$|D|n-?[0-9]{1,300}$|T)/;

const REACT_ARRAY_SLOTS = 1_000_000;

/**
 * React writes an object met a second time in the arguments as a path back to its first place in the same body
 * (`$0:diff:items:0`: part 0, then keys). Such a reference needs no other part; it is let through when its path
 * leads, through plain objects and arrays of this body, to a key that is there, which is the check React makes
 * itself before it follows one (and answers with a 500 when it fails).
 */
function resolvesInBody(root: unknown, reference: string): boolean {
  if (!reference.startsWith('$0:')) return false;
  let at: unknown = root;
  for (const key of reference.slice(3).split(':')) {
    if (at === null || typeof at !== 'object' || !Object.prototype.hasOwnProperty.call(at, key)) return false;
    at = (at as Record<string, unknown>)[key];
  }
  return true;
}

const notJson: Refusal = { status: 400, code: 'invalid_request', message: 'A server action’s arguments must be JSON (React’s encoding of them).', details: { field: 'body' } };

/**
 * Walks decoded arguments (without recursion: nesting depth is whatever the body says) and refuses a reference
 * `resolves` does not accept, or more values than React decodes. React refuses (with a 500) arguments whose arrays
 * hold more than a million slots, counting the characters of their strings; counted here the same way, strings
 * outside arrays included, so nothing it would refuse gets through. `slots` carries the count across the parts of
 * one body.
 */
function checkDecoded(value: unknown, resolves: (reference: string) => boolean, slots = { n: 0 }): Refusal | null {
  const stack: unknown[] = [value];
  while (stack.length) {
    const item = stack.pop();
    if (typeof item === 'string') slots.n += item.length;
    else if (Array.isArray(item)) slots.n += item.length;
    if (slots.n > REACT_ARRAY_SLOTS) {
      return { status: 413, code: 'payload_too_large', message: 'A server action’s arguments hold more values than React decodes (a million).', details: { field: 'body' } };
    }
    if (typeof item === 'string') {
      if (item.startsWith('$') && !INLINE_REFERENCE.test(item) && !resolves(item)) {
        return {
          status: 400,
          code: 'invalid_request',
          message: `A server action’s arguments refer to a part this request does not have ("${item.slice(0, 12)}"): send them as the console’s pages do.`,
          details: { field: 'body' },
        };
      }
    } else if (item !== null && typeof item === 'object') {
      // One by one: spreading half a million elements into push() would overflow the call's arguments.
      for (const inner of Array.isArray(item) ? item : Object.values(item)) stack.push(inner);
    }
  }
  return null;
}

/** What is wrong with a text action body, or null when React can decode it without another part. */
export function checkActionArguments(text: string): Refusal | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return notJson;
  }
  return checkDecoded(value, (reference) => resolvesInBody(value, reference));
}

/**
 * A reference to another part of a multipart body: `$` and the part's number in hexadecimal, after a letter saying
 * what the part holds (`$Q1` a Map, `$W1` a Set, `$@1` a promise, `$B1` a file, `$K1` the fields of a FormData, none
 * for a value), and for a value a path into it (`$1:items:0`). The other kinds React decodes (server references,
 * streams, iterators, typed arrays) are nothing the console's pages send, and are refused.
 */
const PART_REFERENCE = /^\$([QW@BK]?)([0-9a-f]{1,8})((?::[^:]*)*)$/;
const badMultipart = (why: string): Refusal => ({ status: 400, code: 'invalid_request', message: `A server action’s multipart body ${why}.`, details: { field: 'body' } });

/**
 * What is wrong with a multipart action body (React's other encoding, which a page uses when an argument is a
 * FormData or a file), or null when React can decode it: well-formed multipart, its arguments in part 0, and every
 * reference naming a part the body has. React answers each of those failures with a 500 ("Connection closed.",
 * "Unexpected end of form").
 */
export async function checkActionMultipart(body: Buffer, contentType: string): Promise<Refusal | null> {
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(body), { headers: { 'content-type': contentType } }).formData();
  } catch {
    return badMultipart('is not well-formed multipart/form-data (its boundary, headers or end)');
  }
  const parts = new Map<string, unknown>();
  for (const [name, value] of form) {
    if (!/^[0-9]+$/.test(name) || typeof value !== 'string') continue;
    try {
      parts.set(name, JSON.parse(value));
    } catch {
      // A part that is not JSON may still be a file's text or a FormData's field: only a value reference decodes it.
    }
  }
  if (typeof form.get('0') !== 'string') return badMultipart('must carry its arguments as JSON in part 0');
  if (!parts.has('0')) return notJson;
  const resolves = (reference: string): boolean => {
    const match = PART_REFERENCE.exec(reference);
    if (!match) return false;
    const [, kind, hex, path] = match;
    const id = String(parseInt(hex, 16));
    if (kind === 'K') return path === '';
    if (kind === 'B') return path === '' && form.get(id) instanceof Blob;
    if (kind !== '' && path !== '') return false;
    if (!parts.has(id)) return false;
    return path === '' || resolvesInBody(parts.get(id), `$0${path}`);
  };
  const slots = { n: 0 };
  for (const value of parts.values()) {
    const refusal = checkDecoded(value, resolves, slots);
    if (refusal) return refusal;
  }
  return null;
}

/** A server action call (React's text encoding of its arguments, or multipart): screenActionBody reads it first. */
export function hasActionBody(req: IncomingMessage): boolean {
  return req.method === 'POST' && header(req, 'next-action') !== undefined;
}

/**
 * Reads an action body (its size was checked against the limit by the gate), screens it, and gives it back to
 * the request with Readable.unshift for Next to read as if untouched. Resolves true when the request was answered
 * (refused, or gone before its body arrived). The body is pulled with read() rather than 'data' events so the
 * stream does not end before the bytes are put back.
 */
export function screenActionBody(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const declared = Number(header(req, 'content-length') ?? 0);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (answered: boolean) => {
      req.off('readable', pull);
      req.off('end', ended);
      req.off('error', failed);
      req.off('close', failed);
      resolve(answered);
    };
    const screenBody = async () => {
      // Every byte is here: the client's end is no longer a stop before the declared length.
      req.off('end', ended);
      const body = Buffer.concat(chunks);
      const contentType = header(req, 'content-type') ?? '';
      const refusal = /^multipart\/form-data/i.test(contentType) ? await checkActionMultipart(body, contentType) : checkActionArguments(body.toString('utf8'));
      if (refusal) {
        refuse(req, res, refusal);
        return finish(true);
      }
      if (body.length) req.unshift(body);
      finish(false);
    };
    const pull = () => {
      let chunk: Buffer | null;
      while (received < declared && (chunk = req.read() as Buffer | null) !== null) {
        chunks.push(chunk);
        received += chunk.length;
      }
      if (received >= declared) {
        req.off('readable', pull);
        void screenBody();
      }
    };
    // The client stopped before its declared length: nothing to hand on.
    const ended = () => {
      req.socket.destroy();
      finish(true);
    };
    const failed = () => finish(true);
    if (declared === 0) return void screenBody();
    req.on('readable', pull);
    req.on('end', ended);
    req.on('error', failed);
    req.on('close', failed);
  });
}

/**
 * The console's HTTP server with its front door: every request is screened (with `Expect: 100-continue`, before the
 * go-ahead), a server action's body is read and screened, and what Node would answer bare or not at all (no
 * Host, an unmet expectation, CONNECT, Upgrade, a malformed request) is answered in the envelope. `pass` gets each
 * request let through; `failed` answers what `pass` rejects with.
 */
export function createGatedServer(
  options: GateOptions,
  pass: (req: IncomingMessage, res: ServerResponse) => unknown,
  failed: (req: IncomingMessage, res: ServerResponse, err: unknown) => void,
): Server {
  const admitted = (req: IncomingMessage, res: ServerResponse) => {
    const run = () => {
      Promise.resolve(pass(req, res)).catch((err: unknown) => failed(req, res, err));
    };
    if (!hasActionBody(req)) return run();
    screenActionBody(req, res).then(
      (answered) => {
        if (!answered) run();
      },
      (err: unknown) => failed(req, res, err),
    );
  };
  const prepare = (req: IncomingMessage, res: ServerResponse) => {
    // A response stream that fails after the client left must not take the process down with an unhandled 'error'.
    res.on('error', () => undefined);
    setResponseHeaders(req, res);
  };
  // Host is checked by the gate, which answers its absence in the envelope rather than Node's bare 400.
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    prepare(req, res);
    if (!gate(req, res, options)) admitted(req, res);
  });
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    prepare(req, res);
    if (!gateExpectingContinue(req, res, options)) admitted(req, res);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    prepare(req, res);
    answerUnmetExpectation(req, res);
  });
  server.on('connect', answerConnect);
  server.on('upgrade', answerUpgrade);
  server.on('clientError', answerClientError);
  return server;
}
