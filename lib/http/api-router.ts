import { requireRequestActor } from '@/lib/auth/request';
import type { AuthActor } from '@/lib/auth/types';
import { OPERATIONS, type ApiOperation } from '@/lib/openapi/operations';
import { API_HANDLERS, HEAD_HANDLERS, JsonAnswer, type ApiHandler, type OpenHandler, type PathValues } from './api-handlers';
import { withReadYourWrites } from './read-after';
import { errorJson, toErrorResponse, unknownEndpoint } from './respond';
import { ValidationError } from '@/lib/shared/errors';

/**
 * The JSON API's router, driven by the operations table (lib/openapi/operations.ts): every operation's method and
 * path template come from there, and so does the permission a caller needs, checked here before the operation's
 * handler (./api-handlers.ts) runs. The same table generates the OpenAPI document, so what is documented is what is
 * routed and enforced.
 *
 * Two doors use it. The console's server (scripts/serve.ts) answers every plain /api/ request with it through
 * ./api-node.ts, without Next's router; Next itself (`next dev`, `next start`, and anything under /api/ the console's
 * server leaves to Next) reaches it through the one catch-all route file, app/api/[...path]/route.ts.
 *
 * Beyond the table: a path that names no operation answers 404 in the API's envelope, a method an operation path
 * does not take 405 with an Allow header, OPTIONS 204 with the same Allow header, and HEAD runs GET without its body
 * (or the operation's own HEAD handler).
 */
export type ApiMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';
export const API_METHODS: readonly ApiMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

type Bound = { op: ApiOperation; handler: ApiHandler };

export type ApiRoute = {
  /** The OpenAPI path template: `/api/intents/{id}/status`. */
  template: string;
  /** Each segment: its literal text, or the name of the path value it holds. */
  segments: ({ literal: string } | { param: string })[];
  /** The operations at this path, by method (upper case). */
  operations: Map<string, Bound>;
  /** What the Allow header of a 405 or an OPTIONS answer lists, in the table's order (HEAD after GET). */
  allow: string[];
};

export type ApiMatch = { route: ApiRoute; params: PathValues };

function parseTemplate(template: string): ApiRoute['segments'] {
  return template
    .slice(1)
    .split('/')
    .map((part) => (part.startsWith('{') && part.endsWith('}') ? { param: part.slice(1, -1) } : { literal: part }));
}

/** At the first segment where two routes differ in kind, the literal one wins (`/api/intents/bulk-status` over `/api/intents/{id}`). */
function morePrecise(a: ApiRoute, b: ApiRoute): number {
  for (let i = 0; i < a.segments.length; i++) {
    const aLiteral = 'literal' in a.segments[i];
    const bLiteral = 'literal' in b.segments[i];
    if (aLiteral !== bLiteral) return aLiteral ? -1 : 1;
  }
  return 0;
}

/** Builds the routes from the table and the handlers, refusing at start a table and handlers that disagree. */
export function buildRoutes(operations: readonly ApiOperation[] = OPERATIONS, handlers: Record<string, ApiHandler> = API_HANDLERS): ApiRoute[] {
  const byTemplate = new Map<string, ApiRoute>();
  for (const op of operations) {
    const handler = handlers[op.operationId];
    if (!handler) throw new Error(`The JSON API has no handler for the operation ${op.operationId} (${op.method.toUpperCase()} ${op.path}).`);
    // A handler that takes the caller must only ever run behind a permission check.
    if (op.auth === 'bearer' ? !op.permission : handler.length > 2) throw new Error(`The operation ${op.operationId} and its handler disagree on who may call it.`);
    let route = byTemplate.get(op.path);
    if (!route) {
      route = { template: op.path, segments: parseTemplate(op.path), operations: new Map(), allow: [] };
      byTemplate.set(op.path, route);
    }
    const method = op.method.toUpperCase();
    if (route.operations.has(method)) throw new Error(`Two operations answer ${method} ${op.path}.`);
    route.operations.set(method, { op, handler });
    route.allow.push(method);
  }
  const known = new Set(operations.map((op) => op.operationId));
  const stray = Object.keys(handlers).filter((id) => !known.has(id));
  if (stray.length) throw new Error(`Handlers for operations the table does not list: ${stray.join(', ')}.`);
  const routes = [...byTemplate.values()];
  for (const route of routes) {
    if (route.allow.includes('GET')) route.allow.splice(route.allow.indexOf('GET') + 1, 0, 'HEAD');
    route.allow.push('OPTIONS');
  }
  return routes;
}

export class ApiRouter {
  private readonly bySegmentCount = new Map<number, ApiRoute[]>();

  constructor(readonly routes: ApiRoute[] = buildRoutes()) {
    for (const route of routes) {
      const list = this.bySegmentCount.get(route.segments.length) ?? [];
      list.push(route);
      this.bySegmentCount.set(route.segments.length, list);
    }
    for (const list of this.bySegmentCount.values()) list.sort(morePrecise);
  }

  /** How many operations the routes answer. */
  get operationCount(): number {
    return this.routes.reduce((n, route) => n + route.operations.size, 0);
  }

  /**
   * The route of a path (as it arrives: percent-encoded, without the query), with its path values decoded; null when
   * no operation lives there. The front door (./gate.ts) has already refused encodings that do not decode.
   */
  match(pathname: string): ApiMatch | null {
    const parts = pathname.slice(1).split('/');
    const candidates = this.bySegmentCount.get(parts.length);
    if (!candidates) return null;
    let decoded: string[];
    try {
      decoded = parts.map((p) => (p.includes('%') ? decodeURIComponent(p) : p));
    } catch {
      return null;
    }
    for (const route of candidates) {
      const params: PathValues = {};
      const fits = route.segments.every((segment, i) => {
        if ('literal' in segment) return segment.literal === decoded[i];
        params[segment.param] = decoded[i];
        return decoded[i] !== '';
      });
      if (fits) return { route, params };
    }
    return null;
  }

  /** Answers a request under /api/ as a Response: the route its URL names, or the API's 404. */
  async handle(request: Request): Promise<Response> {
    const found = this.match(new URL(request.url).pathname);
    if (!found) return unknownEndpoint(request);
    return asResponse(await this.answer(request, request.method.toUpperCase(), found));
  }

  /**
   * Answers a request for a route it matched, as `method`. `closed` tells a streaming answer that its client went
   * away (the request's own signal, unless the door knows better).
   */
  async answer(request: Request, method: string, { route, params }: ApiMatch, closed: AbortSignal = request.signal): Promise<Response | JsonAnswer> {
    if (method === 'OPTIONS') return new Response(null, { status: 204, headers: { Allow: route.allow.join(', '), 'Cache-Control': 'no-store' } });
    const head = method === 'HEAD';
    const bound = route.operations.get(head ? 'GET' : method);
    if (!bound) return methodNotAllowed(request, method, route);
    const handler = (head && HEAD_HANDLERS[bound.op.operationId]) || bound.handler;
    let actor: AuthActor | undefined;
    try {
      // An operation that takes no query refuses one (after the caller is known), as one with a query refuses a
      // parameter it does not know: a misspelt or stray parameter is a 400 naming it, never silently ignored.
      if (bound.op.auth !== 'bearer') {
        checkQuery(request, bound.op);
        return await (handler as OpenHandler)(request, params);
      }
      // The caller is known and allowed before the body is read, so a refused request touches nothing. The audit
      // log's actor comes from here, never from the request body.
      actor = await requireRequestActor(request, bound.op.permission!);
      checkQuery(request, bound.op);
      checkNoBody(request, bound.op);
      const caller = actor;
      return await withReadYourWrites(request, method, caller, () => handler(request, params, caller, closed));
    } catch (err) {
      return toErrorResponse(err, actor);
    }
  }
}

/**
 * What every operation's query must be before its own schema reads it: only the parameters its document lists (none
 * at all for one that takes none), and each of them once (every parameter of the API takes one value:
 * `status=RECEIVED&status=FAILED` was read as FAILED). Checked here for every operation, so that no endpoint quietly
 * ignores a misspelt parameter because its own schema happens not to be strict.
 */
function checkQuery(request: Request, op: ApiOperation): void {
  const params = new URL(request.url).searchParams;
  const names = [...params.keys()];
  if (!op.query && names.length) throw new ValidationError([...new Set(names)].map((name) => ({ field: name, message: 'is not a parameter of this endpoint, which takes none' })));
  const known = Object.keys(op.query?.shape ?? {});
  const unknown = [...new Set(names.filter((name) => !known.includes(name)))];
  if (unknown.length) throw new ValidationError(unknown.map((name) => ({ field: name, message: `is not a parameter of this endpoint; it takes ${known.join(', ')}` })));
  const repeated = [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
  if (repeated.length) throw new ValidationError(repeated.map((name) => ({ field: name, message: 'is given more than once; it takes one value' })));
}

/**
 * An operation that takes no body (a cancel, a baseline, a release by path) refuses one, as one with a body refuses a
 * field it does not know: a caller who sent one meant something by it, and would otherwise not learn that it was
 * ignored. A body is declared by its length or by chunked transfer; an empty one is no body.
 */
function checkNoBody(request: Request, op: ApiOperation): void {
  if (op.body || op.method === 'get') return;
  const length = request.headers.get('content-length');
  const sent = (length !== null && length.trim() !== '0') || request.headers.has('transfer-encoding');
  if (sent) throw new ValidationError([{ field: 'body', message: 'must be empty: this endpoint takes no body' }]);
}

/** A handler's answer as a Response, for doors that speak Web requests and responses. */
export function asResponse(answer: Response | JsonAnswer): Response {
  return answer instanceof JsonAnswer ? answer.toResponse() : answer;
}

/** The 405 for a method a route does not take, in the API's envelope, with the Allow header HTTP asks for. */
function methodNotAllowed(request: Request, method: string, route: ApiRoute): Response {
  return errorJson(
    405,
    {
      code: 'method_not_allowed',
      message: `${method} is not supported on ${new URL(request.url).pathname}; it answers ${route.allow.join(', ')}.`,
      details: { method, allowed: route.allow },
    },
    { Allow: route.allow.join(', ') },
  );
}

let shared: ApiRouter | undefined;

/** The router of this process's table, built once. */
export function apiRouter(): ApiRouter {
  return (shared ??= new ApiRouter());
}

type RouteContext = { params?: Promise<PathValues> | PathValues } | undefined;
export type RouteMethods = Record<ApiMethod, (request: Request, context?: RouteContext) => Promise<Response>>;

/**
 * One path of the API as Next's route handlers would export it (`GET`, `POST`, …, each `(request, context)`), for
 * tests that call an operation directly: the method is the one named, the path values those of `context` (or, when
 * it gives none, those the request's URL holds).
 */
export function apiRoute(template: string): RouteMethods {
  const router = apiRouter();
  const route = router.routes.find((r) => r.template === template);
  if (!route) throw new Error(`No operation of the JSON API lives at ${template}.`);
  const call = (method: ApiMethod) => async (request: Request, context?: RouteContext) => {
    const given = context?.params ? await context.params : undefined;
    const params = given ?? router.match(new URL(request.url).pathname)?.params ?? {};
    return asResponse(await router.answer(request, method, { route, params }));
  };
  return Object.fromEntries(API_METHODS.map((m) => [m, call(m)])) as RouteMethods;
}
