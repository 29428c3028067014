import { NextResponse } from 'next/server';
import type { z } from 'zod';
import type { AuthActor } from '@/lib/auth/types';
import { oneLineError } from '@/lib/db/pg-capture';
import { isConnectionLoss, pressureReason, sqlState } from '@/lib/db/sqlstate';
import { errorBodyFor } from '@/lib/locks/mask';
import { DatabaseUnderPressureError, DomainError, ValidationError, type ErrorBody } from '@/lib/shared/errors';
import { isPlainObject } from '@/lib/shared/json';
import { parseInput } from '@/lib/shared/validation';
import { MAX_BODY_BYTES } from './gate';

/** The API's error envelope: `{ error: { code, message, details? } }`. */
export function errorJson(status: number, body: ErrorBody, headers?: HeadersInit): NextResponse {
  return NextResponse.json({ error: body }, { status, headers });
}

/** A domain error as an answer for `viewer` (the lock holders' query text a 423 names is masked for most roles). */
export function domainErrorResponse(err: DomainError, viewer?: AuthActor | null): NextResponse {
  // Auth errors carry the headers HTTP asks for (WWW-Authenticate on 401, Retry-After on 429).
  const headers = (err as { headers?: Record<string, string> }).headers;
  return errorJson(err.httpStatus, errorBodyFor(err.toBody(), viewer), headers);
}

/**
 * PostgreSQL's "data exception" class (SQLSTATE 22xxx: a NUL or an unpaired surrogate in text, a date or number out
 * of its range, text that is not a number) means the request carried a value the database cannot hold. Validation
 * should have refused it with the field's name; when a door's schema missed one, this still answers 400, not 500.
 */
class UnstorableValueError extends DomainError {
  readonly code = 'invalid_request';
  readonly httpStatus = 400;
  constructor(state: string) {
    super('Invalid request: a value in it cannot be stored or compared (a NUL character, an unpaired surrogate, or a number or date out of range). Nothing was changed.', { sqlState: state });
  }
}

/**
 * The database went away under the request (a restart, a failover, a killed backend): not the request's fault and
 * not a bug. A change is applied whole or not at all, so repeating the request tells its outcome.
 */
class DatabaseUnavailableError extends DomainError {
  readonly code = 'database_unavailable';
  readonly httpStatus = 503;
  readonly headers = { 'Retry-After': '1' };
  constructor() {
    super(
      'The connection to the database was lost while handling this request (a restart, a failover or a killed backend). A change is applied whole or not at all: repeat the request — with the same idempotency key if you sent one — to get its outcome.',
    );
  }
}

/**
 * A domain error made by another copy of these modules. The console's server loads them for the JSON API beside the
 * build's own copy, which pages, server actions and housekeeping run on, and objects kept on globalThis (the lease
 * backend, the dedup store) are shared by both: an error one of them throws is of the other copy's class, and
 * `instanceof` would take it for an unexpected failure (a 500) instead of, say, a 503 with Retry-After.
 */
function isForeignDomainError(err: unknown): err is DomainError {
  if (!(err instanceof Error)) return false;
  const candidate = err as Partial<DomainError>;
  return typeof candidate.code === 'string' && typeof candidate.httpStatus === 'number' && typeof candidate.toBody === 'function';
}

/**
 * A thrown error as a domain error when it is one (or a data exception from the database, or the database going
 * away); otherwise null.
 */
export function asDomainError(err: unknown): DomainError | null {
  if (err instanceof DomainError || isForeignDomainError(err)) return err;
  const state = sqlState(err);
  if (state?.startsWith('22')) return new UnstorableValueError(state);
  if (isConnectionLoss(err)) {
    console.warn(`[db] the database connection was lost during a request: ${oneLineError(err)}`);
    return new DatabaseUnavailableError();
  }
  const reason = pressureReason(err);
  return reason ? new DatabaseUnderPressureError(reason) : null;
}

/** Maps anything thrown by a door to a response; unexpected failures are logged and answered generically. */
export function toErrorResponse(err: unknown, viewer?: AuthActor | null): NextResponse {
  const known = asDomainError(err);
  if (known) return domainErrorResponse(known, viewer);
  console.error('[api] unexpected error:', err);
  return errorJson(500, { code: 'internal_error', message: 'The server failed to handle this request; nothing was applied by it. Try again, and report it if it persists.' });
}

class PayloadTooLargeError extends DomainError {
  readonly code = 'payload_too_large';
  readonly httpStatus = 413;
  constructor() {
    super(`The request body is larger than ${MAX_BODY_BYTES / 1024} KiB.`, { field: 'body', maxBytes: MAX_BODY_BYTES });
  }
}

/**
 * The body as text, counted while it is read: whatever the transfer encoding (a chunked body declares no length),
 * reading stops and the stream is cancelled as soon as it passes `max`, so an oversized upload is never held whole.
 */
export async function readLimited(request: Request, max: number): Promise<string> {
  const source = bodySources.get(request);
  if (source) {
    const read = await source(max);
    if (read === 'too_large') throw new PayloadTooLargeError();
    if (read === 'broken') throw new ValidationError([{ field: 'body', message: 'could not be read completely (the connection broke off)' }]);
    return decodeUtf8([read]);
  }
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let step: ReadableStreamReadResult<Uint8Array>;
    try {
      step = await reader.read();
    } catch {
      throw new ValidationError([{ field: 'body', message: 'could not be read completely (the connection broke off)' }]);
    }
    if (step.done) break;
    size += step.value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw new PayloadTooLargeError();
    }
    chunks.push(step.value);
  }
  return decodeUtf8(chunks);
}

function decodeUtf8(chunks: Uint8Array[]): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
  } catch {
    throw new ValidationError([{ field: 'body', message: 'is not valid UTF-8 text' }]);
  }
}

/**
 * A request body read by the door itself rather than through the Request's stream: the console's server reads it
 * from Node's request (lib/http/api-node.ts), which spares a web stream per request. Read only when a handler asks,
 * at most `max` bytes: 'too_large' past that, 'broken' when the client stopped before its end.
 */
export type BodySource = (max: number) => Promise<Uint8Array | 'too_large' | 'broken'>;
const bodySources = new WeakMap<Request, BodySource>();

/** Makes `source` the body of `request` for readLimited (and so for every reader of a JSON body). */
export function setBodySource(request: Request, source: BodySource): void {
  bodySources.set(request, source);
}

/** Reads a JSON body, answering a malformed or missing one with a 400 that says so. */
export async function readJsonBody(request: Request): Promise<unknown> {
  const type = request.headers.get('content-type') ?? '';
  if (type && !/^application\/(.+\+)?json\b/i.test(type)) {
    throw new ValidationError([{ field: 'body', message: `must be JSON (Content-Type: application/json), not ${type.split(';')[0]}` }]);
  }
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > MAX_BODY_BYTES) throw new PayloadTooLargeError();
  const text = await readLimited(request, MAX_BODY_BYTES);
  if (!text.trim()) throw new ValidationError([{ field: 'body', message: 'is required (a JSON object)' }]);
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError([{ field: 'body', message: 'is not valid JSON' }]);
  }
}

/**
 * The route handlers' one validation step: the JSON body, with the values the path supplies (`fromPath`, e.g. the
 * intent id) added, parsed by the domain's own schema. Typed, and parsed once: the domain function recognises the
 * parsed value and does not parse it again. A body that is not an object is refused as such.
 */
export async function readInput<S extends z.ZodType>(request: Request, schema: S, fromPath?: Record<string, string>): Promise<z.infer<S>> {
  const body = await readJsonBody(request);
  if (!fromPath) return parseInput(schema, body);
  return parseInput(schema, withPathValues(body, fromPath));
}

function withPathValues(body: unknown, fromPath: Record<string, string>): Record<string, unknown> {
  if (!isPlainObject(body)) throw new ValidationError([{ field: 'body', message: 'must be a JSON object' }]);
  // The path names these; the same names in the body are not fields of the request.
  const doubled = Object.keys(fromPath).filter((k) => Object.hasOwn(body, k));
  if (doubled.length) throw new ValidationError(doubled.map((field) => ({ field, message: 'is not a known field' })));
  return { ...body, ...fromPath };
}

/** The conventional request header for an idempotency key: the same key as a body's `idempotencyKey`. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/**
 * readInput for the commands that take an idempotency key: the key comes from the body's `idempotencyKey` or from
 * the `Idempotency-Key` header, which HTTP clients send by convention, with one meaning (the same key in either
 * place is the same request). Both given and different is a 400 naming the field, and nothing is done; a header
 * that is not a valid key is a 400 naming the header.
 */
export async function readKeyedInput<S extends z.ZodType>(request: Request, schema: S, fromPath: Record<string, string> = {}): Promise<z.infer<S>> {
  const header = request.headers.get(IDEMPOTENCY_KEY_HEADER);
  if (header === null) return readInput(request, schema, fromPath);
  const body = withPathValues(await readJsonBody(request), fromPath);
  if (Object.hasOwn(body, 'idempotencyKey') && body.idempotencyKey !== header) {
    throw new ValidationError([{ field: 'idempotencyKey', message: `differs from the ${IDEMPOTENCY_KEY_HEADER} header: send the key once, or the same key in both` }]);
  }
  try {
    return parseInput(schema, { ...body, idempotencyKey: header });
  } catch (err) {
    if (!(err instanceof ValidationError) || Object.hasOwn(body, 'idempotencyKey')) throw err;
    throw new ValidationError(err.issues.map((i) => (i.field === 'idempotencyKey' ? { ...i, field: IDEMPOTENCY_KEY_HEADER } : i)));
  }
}

/** The answer for a path under /api that names no endpoint (lib/http/api-router.ts). */
export function unknownEndpoint(request: Request): NextResponse {
  return errorJson(404, {
    code: 'not_found',
    message: `There is no API endpoint at ${new URL(request.url).pathname}. The endpoints are listed in the API document (GET /api/openapi.json, or /api-docs in the console).`,
    details: { path: new URL(request.url).pathname },
  });
}
