import { NextResponse } from 'next/server';
import type { z } from 'zod';
import { DomainError, ValidationError, type ErrorBody } from '@/lib/shared/errors';
import { isPlainObject } from '@/lib/shared/json';
import { parseInput } from '@/lib/shared/validation';

/** The API's error envelope (brief §5): `{ error: { code, message, details? } }`. */
export function errorJson(status: number, body: ErrorBody, headers?: HeadersInit): NextResponse {
  return NextResponse.json({ error: body }, { status, headers });
}

export function domainErrorResponse(err: DomainError): NextResponse {
  // Auth errors carry the headers HTTP asks for (WWW-Authenticate on 401, Retry-After on 429).
  const headers = (err as { headers?: Record<string, string> }).headers;
  return errorJson(err.httpStatus, err.toBody(), headers);
}

/** Maps anything thrown by a door to a response; unexpected failures are logged and answered generically. */
export function toErrorResponse(err: unknown): NextResponse {
  if (err instanceof DomainError) return domainErrorResponse(err);
  console.error('[api] unexpected error:', err);
  return errorJson(500, { code: 'internal_error', message: 'The server failed to handle this request; nothing was applied by it. Try again, and report it if it persists.' });
}

const MAX_BODY_BYTES = 1024 * 1024;

class PayloadTooLargeError extends DomainError {
  readonly code = 'payload_too_large';
  readonly httpStatus = 413;
  constructor() {
    super(`The request body is larger than ${MAX_BODY_BYTES / 1024} KiB.`, { field: 'body', maxBytes: MAX_BODY_BYTES });
  }
}

/** Reads a JSON body, answering a malformed or missing one with a 400 that says so. */
export async function readJsonBody(request: Request): Promise<unknown> {
  const type = request.headers.get('content-type') ?? '';
  if (type && !/^application\/(.+\+)?json\b/i.test(type)) {
    throw new ValidationError([{ field: 'body', message: `must be JSON (Content-Type: application/json), not ${type.split(';')[0]}` }]);
  }
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > MAX_BODY_BYTES) throw new PayloadTooLargeError();
  const text = await request.text();
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw new PayloadTooLargeError();
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
  if (!isPlainObject(body)) throw new ValidationError([{ field: 'body', message: 'must be a JSON object' }]);
  // The path names these; the same names in the body are not fields of the request.
  const doubled = Object.keys(fromPath).filter((k) => Object.hasOwn(body, k));
  if (doubled.length) throw new ValidationError(doubled.map((field) => ({ field, message: 'is not a known field' })));
  return parseInput(schema, { ...body, ...fromPath });
}

/** Route handler wrapper: runs the door, turns domain errors into the envelope. */
export function handler<C>(fn: (request: Request, context: C) => Promise<Response>) {
  return async (request: Request, context: C): Promise<Response> => {
    try {
      return await fn(request, context);
    } catch (err) {
      return toErrorResponse(err);
    }
  };
}

type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
const METHODS: Method[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Handlers for the methods a route does not support, so a wrong method gets the API's error envelope (405 with an
 * Allow header) instead of Next's empty answer. A route file exports the ones it lacks:
 * `export const { PUT, PATCH, DELETE } = otherMethods('GET', 'POST');` (HEAD follows GET when GET exists).
 */
export function otherMethods(...allowed: Method[]): Record<Method, (request: Request) => Promise<Response>> {
  const allow = allowed.includes('GET') && !allowed.includes('HEAD') ? [...allowed, 'HEAD'] : allowed;
  const refuse = async (request: Request) =>
    errorJson(
      405,
      {
        code: 'method_not_allowed',
        message: `${request.method} is not supported on ${new URL(request.url).pathname}; it answers ${allow.join(', ')}.`,
        details: { method: request.method, allowed: allow },
      },
      { Allow: allow.join(', ') },
    );
  const handlers = {} as Record<Method, (request: Request) => Promise<Response>>;
  for (const m of METHODS) handlers[m] = refuse;
  return handlers;
}

/** The answer for a path under /api that names no endpoint (app/api/[...path]/route.ts). */
export function unknownEndpoint(request: Request): NextResponse {
  return errorJson(404, {
    code: 'not_found',
    message: `There is no API endpoint at ${new URL(request.url).pathname}. The endpoints are listed in the README (JSON API).`,
    details: { path: new URL(request.url).pathname },
  });
}
