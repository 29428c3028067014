import fc from 'fast-check';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { startReplay } from '@/lib/replay/runner';
import { ROLES } from '@/lib/auth/permissions';
import { openApiDocument } from '@/lib/openapi/document';
import { apiRoute, apiRouter, type ApiMethod } from '@/lib/http/api-router';
import { OPERATIONS, type ApiOperation } from '@/lib/openapi/operations';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { makeIntent, resetDatabase } from '../helpers';
import { brokenObject, validValue, wrongType, type Context, type JsonSchema } from './arbitraries';

/**
 * The contract test: the OpenAPI document against the real route handlers. For every documented operation,
 * fast-check generates requests the document calls valid (and the route's own Zod schema accepts) and requests it
 * calls invalid, sends them with a token holding every role (and without credentials), and checks each answer:
 * its status is documented for that operation, its body validates against the documented schema (ajv, JSON Schema
 * 2020-12, the document's own components), the documented required headers are there, and nothing is a 5xx.
 * A route that answers something the document does not say fails here.
 */
const RUNS = Number(process.env.CONTRACT_RUNS ?? 25);

type Doc = {
  paths: Record<string, Record<string, { parameters?: { in: string; name: string; required?: boolean; schema: JsonSchema }[]; requestBody?: { content: Record<string, { schema: JsonSchema }> }; responses: Record<string, { headers?: Record<string, { required?: boolean }>; content?: Record<string, { schema: JsonSchema }> }> }>>;
  components: { schemas: Record<string, JsonSchema> };
};

const doc = openApiDocument() as unknown as Doc;
const addFormats = (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const validators = new Map<string, ValidateFunction>();

type Handler = (request: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response>;
function handlerFor(path: string, method: string): Handler {
  return apiRoute(path)[method.toUpperCase() as ApiMethod];
}

let token: string;
let knownIds: string[] = [];
const ctx: Context = { components: doc.components.schemas, knownIds: () => knownIds };

beforeAll(async () => {
  await resetDatabase();
  await resetAuth();
  token = (await userWithToken(ROLES)).token;
  // A replay run "in progress" for the whole file: every valid start is answered 409 replay_in_progress (documented)
  // instead of starting real runs in the background of the test.
  await db().$executeRaw`TRUNCATE replay_runs`;
  const held = await startReplay({ scenarios: ['lock-latency'], size: 'small' }, 'cli', { name: 'contract' });
  await db().$executeRaw`UPDATE replay_runs SET heartbeat_at = now() + interval '1 day' WHERE id = ${held.id}::uuid`;
});
afterAll(async () => {
  await db().$executeRaw`TRUNCATE replay_runs`;
});

async function freshIntents() {
  knownIds = [];
  for (const status of ['RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED', 'COMPLETED', 'FAILED'] as const) knownIds.push((await makeIntent(status)).id);
}

type Call = { path: Record<string, string>; query: Record<string, string>; body?: unknown; auth: 'token' | 'none' | 'bogus' };

function fillPath(template: string, params: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}

async function send(op: ApiOperation, call: Call): Promise<{ status: number; text: string; headers: Headers }> {
  const query = new URLSearchParams(call.query).toString();
  const url = `${fillPath(op.path, call.path)}${query ? `?${query}` : ''}`;
  const request = apiRequest(url, {
    method: op.method.toUpperCase(),
    body: call.body,
    token: call.auth === 'token' ? token : call.auth === 'bogus' ? 'bc_not-a-real-token' : undefined,
  });
  const response = await handlerFor(op.path, op.method)(request, { params: Promise.resolve(call.path) });
  // A stream is opened, then closed: its status and headers are the answer.
  const text = response.headers.get('content-type')?.startsWith('text/event-stream') ? (await response.body?.cancel(), '') : await response.text();
  return { status: response.status, text, headers: response.headers };
}

/** The documented answer for this status, or a failed expectation naming what the route said instead. */
function checkAnswer(op: ApiOperation, call: Call, answer: { status: number; text: string; headers: Headers }) {
  const label = `${op.method.toUpperCase()} ${op.path} ${JSON.stringify(call).slice(0, 300)}`;
  expect(answer.status, `${label} answered 5xx: ${answer.text.slice(0, 500)}`).toBeLessThan(500);
  const documented = doc.paths[op.path][op.method].responses[String(answer.status)];
  expect(documented, `${label} answered ${answer.status}, which the document does not list: ${answer.text.slice(0, 500)}`).toBeDefined();
  for (const [name, header] of Object.entries(documented.headers ?? {})) {
    if (header.required) expect(answer.headers.get(name), `${label}: required header ${name}`).not.toBeNull();
  }
  const contentType = (answer.headers.get('content-type') ?? '').split(';')[0];
  const media = documented.content?.[contentType];
  expect(media, `${label} answered ${answer.status} as ${contentType}, documented as ${Object.keys(documented.content ?? {}).join(', ')}`).toBeDefined();
  if (contentType !== 'application/json') return;
  const key = `${op.operationId} ${answer.status}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile({ ...media!.schema, components: doc.components });
    validators.set(key, validate);
  }
  const body = JSON.parse(answer.text);
  expect(validate(body), `${label} → ${answer.status}: body does not match the document: ${ajv.errorsText(validate.errors)}\n${answer.text.slice(0, 800)}`).toBe(true);
}

function parameters(op: ApiOperation, where: 'path' | 'query') {
  return (doc.paths[op.path][op.method].parameters ?? []).filter((p) => p.in === where);
}

/** Opaque values only the API itself issues (a page's `nextCursor`): no schema can generate a valid one. */
const OPAQUE = new Set(['cursor']);

/** Path and query values the document calls valid (strings, as they travel in a URL) that the route's schemas accept. */
function validParams(op: ApiOperation, where: 'path' | 'query'): fc.Arbitrary<Record<string, string>> {
  const params = parameters(op, where);
  const record: Record<string, fc.Arbitrary<string>> = {};
  for (const p of params) if (!OPAQUE.has(p.name)) record[p.name] = validValue(p.schema, ctx).map(String);
  const schema = where === 'path' ? op.pathParams : op.query;
  return fc
    .record(record, { requiredKeys: params.filter((p) => p.required || where === 'path').map((p) => p.name) })
    .filter((v) => !schema || schema.safeParse(v).success) as fc.Arbitrary<Record<string, string>>;
}

function validBody(op: ApiOperation): fc.Arbitrary<unknown> | undefined {
  const schema = doc.paths[op.path][op.method].requestBody?.content['application/json'].schema;
  if (!schema || !op.body) return undefined;
  return validValue(schema, ctx).filter((v) => op.body!.safeParse(v).success);
}

const validCall = (op: ApiOperation): fc.Arbitrary<Call> =>
  fc.record({ path: validParams(op, 'path'), query: validParams(op, 'query'), body: validBody(op) ?? fc.constant(undefined), auth: fc.constant('token' as const) });

/**
 * One thing wrong: the body, a query value (or an unknown query parameter), the path id, or the credentials.
 * Whether the route's own schema refuses the call decides what is expected; no filtering, which could loop forever
 * for a parameter whose every string is valid.
 */
function invalidCall(op: ApiOperation): fc.Arbitrary<{ call: Call; wrong: string }> {
  const ways: fc.Arbitrary<{ call: Call; wrong: string }>[] = [];
  const bodySchema = doc.paths[op.path][op.method].requestBody?.content['application/json'].schema;
  if (bodySchema && op.body) {
    ways.push(
      fc.record({ path: validParams(op, 'path'), query: fc.constant({}), body: brokenObject(bodySchema, ctx), auth: fc.constant('token' as const) }).map((call) => ({ call, wrong: 'body' })),
    );
  }
  const query = parameters(op, 'query');
  if (query.length && op.query) {
    const badValue = (p: { schema: JsonSchema }) =>
      fc.oneof(
        wrongType(p.schema, ctx).map((bad) => (typeof bad === 'object' ? JSON.stringify(bad) : String(bad))),
        fc.constant('x'.repeat(600)),
        fc.constant('not-a-valid-value'),
      );
    ways.push(
      fc
        .tuple(validCall(op), fc.constantFrom(...query))
        .chain(([call, p]) => badValue(p).map((bad) => ({ call: { ...call, query: { ...call.query, [p.name]: bad } }, wrong: `query ${p.name}` }))),
    );
  }
  if (op.query && !op.query.safeParse({ unknownParameter: 'x' }).success) {
    ways.push(validCall(op).map((call) => ({ call: { ...call, query: { ...call.query, unknownParameter: 'x' } }, wrong: 'query unknownParameter' })));
  }
  if (parameters(op, 'path').length && op.pathParams) {
    ways.push(fc.tuple(validCall(op), fc.string({ minLength: 1, maxLength: 40 })).map(([call, id]) => ({ call: { ...call, path: { id } }, wrong: 'path id' })));
  }
  if (op.auth === 'bearer') {
    ways.push(validCall(op).chain((call) => fc.constantFrom<Call['auth']>('none', 'bogus').map((auth) => ({ call: { ...call, auth }, wrong: `credentials (${auth})` }))));
  }
  return fc.oneof(...ways);
}

/** Whether the route's own schemas refuse this call's input (bad credentials aside). */
function refusedByRoute(op: ApiOperation, call: Call): boolean {
  if (op.pathParams && !op.pathParams.safeParse(call.path).success) return true;
  if (op.query && !op.query.safeParse(call.query).success) return true;
  if (op.body && !op.body.safeParse(call.body).success) return true;
  return false;
}

describe('the OpenAPI document', () => {
  it('is served open at GET /api/openapi.json, as OpenAPI 3.1 with the Bearer scheme', async () => {
    const handler = handlerFor('/api/openapi.json', 'get');
    const res = await handler(new Request('http://localhost:3000/api/openapi.json'), { params: Promise.resolve({}) });
    expect(res.status).toBe(200);
    const served = await res.json();
    expect(served.openapi).toBe('3.1.0');
    expect(served.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(Object.keys(served.paths).length).toBe(new Set(OPERATIONS.map((o) => o.path)).size);
  });

  it('routes every documented operation, and nothing else: every other method of a path is a 405', async () => {
    const documented = new Set(OPERATIONS.map((o) => `${o.method.toUpperCase()} ${o.path}`));
    const routed = apiRouter().routes.flatMap((route) => [...route.operations.keys()].map((method) => `${method} ${route.template}`));
    expect(new Set(routed)).toEqual(documented);
    for (const route of apiRouter().routes) {
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const) {
        if (documented.has(`${method} ${route.template}`)) continue;
        const path = route.template.replace(/\{\w+\}/g, 'x');
        const res = await apiRoute(route.template)[method](apiRequest(path, { method, token }));
        expect(res.status, `${method} ${route.template} is not in the OpenAPI document but answers ${res.status}`).toBe(405);
        expect(res.headers.get('allow')).toBe(route.allow.join(', '));
      }
    }
  });

  it('documents the Idempotency-Key request header and the Idempotent-Replayed answer header on the operations that take a key', () => {
    const keyed = OPERATIONS.filter((o) => o.idempotent);
    expect(keyed.map((o) => o.operationId).sort()).toEqual(['createIntent', 'reevaluateIntent', 'updateIntentStatus']);
    for (const op of keyed) {
      const documented = doc.paths[op.path][op.method];
      expect(documented.responses[String(op.success.status)].headers).toHaveProperty('Idempotent-Replayed');
      const keyHeader = documented.parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
      expect(keyHeader, `${op.operationId}: the Idempotency-Key header`).toBeDefined();
      expect(keyHeader?.required ?? false).toBe(false);
      expect(documented.responses['422']).toBeDefined();
    }
  });
});

/**
 * Answers no generated request reaches: they depend on what happened before (a fence already moved past a token).
 * Each case makes the state first, then checks the answer against the document like every generated one.
 */
describe('answers that depend on earlier requests', () => {
  const fenced = (resource: string, token: number) => ({ fencing: { resource, token } });
  it.each([
    { operationId: 'updateIntentStatus', from: 'RECEIVED' as const, higher: { status: 'NORMALIZED' }, lower: { status: 'PROCESSED' } },
    { operationId: 'reevaluateIntent', from: 'PROCESSED' as const, higher: { diff: { a: 1 }, source: 'contract', reason: 'first' }, lower: { diff: { a: 2 }, source: 'contract', reason: 'late' } },
    { operationId: 'runPipeline', from: 'RECEIVED' as const, higher: { mode: 'FAILFAST' }, lower: { mode: 'FAILFAST' } },
  ])('$operationId: a superseded token is 409 fencing_token_stale, as documented', async ({ operationId, from, higher, lower }) => {
    const op = OPERATIONS.find((o) => o.operationId === operationId)!;
    const resource = `contract:${operationId}`;
    const first = await makeIntent(from);
    // The resource's current grant is 5 (tokens 4 and below were superseded).
    await db().$executeRaw`SELECT bridge_fence_grant(${resource}, 5)`;
    const accepted: Call = { path: { id: first.id }, query: {}, body: { ...higher, ...fenced(resource, 5) }, auth: 'token' };
    const ok = await send(op, accepted);
    checkAnswer(op, accepted, ok);
    expect(ok.status, ok.text).toBe(200);
    // A pipeline run leaves its intent COMPLETED: the late run goes to another intent of the same resource.
    const target = operationId === 'runPipeline' ? await makeIntent(from) : first;
    const late: Call = { path: { id: target.id }, query: {}, body: { ...lower, ...fenced(resource, 4) }, auth: 'token' };
    const refused = await send(op, late);
    checkAnswer(op, late, refused);
    expect(refused.status, refused.text).toBe(409);
    expect(JSON.parse(refused.text).error).toMatchObject({ code: 'fencing_token_stale', details: { resource, token: 4 } });
  });
});

describe('a keyed create repeated', () => {
  it('answers the first 201 again with Idempotent-Replayed, and the key with another body 422, as documented', async () => {
    const op = OPERATIONS.find((o) => o.operationId === 'createIntent')!;
    const call: Call = { path: {}, query: {}, body: { payload: { order: 'contract-1' }, source: 'contract', idempotencyKey: `contract-create-${Date.now()}` }, auth: 'token' };
    const first = await send(op, call);
    const again = await send(op, call);
    for (const answer of [first, again]) {
      checkAnswer(op, call, answer);
      expect(answer.status, answer.text).toBe(201);
    }
    expect(again.text).toBe(first.text);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.headers.get('Location')).toBe(first.headers.get('Location'));
    const reused: Call = { ...call, body: { ...(call.body as object), source: 'another' } };
    const refused = await send(op, reused);
    checkAnswer(op, reused, refused);
    expect(refused.status, refused.text).toBe(422);
  });
});

describe.each(OPERATIONS)('$method $path ($operationId)', (op) => {
  it('answers generated valid requests as documented', async () => {
    await freshIntents();
    await fc.assert(
      fc.asyncProperty(validCall(op), async (call) => {
        const answer = await send(op, call);
        checkAnswer(op, call, answer);
        // Valid input is never refused as bad input.
        // (Unless the document says a 400 can depend on the data, which no schema foresees.)
        if (answer.status === 400 && !op.dataDependent400) expect.fail(`valid request refused with 400: ${answer.text}`);
      }),
      { numRuns: RUNS },
    );
  });

  it('answers generated invalid requests as documented (a 4xx, never a 5xx)', async () => {
    if (!op.body && !op.query && !op.pathParams && op.auth !== 'bearer') return; // nothing a caller can get wrong
    await freshIntents();
    await fc.assert(
      fc.asyncProperty(invalidCall(op), async ({ call, wrong }) => {
        const answer = await send(op, call);
        checkAnswer(op, call, answer);
        // Where the document says a wrong value is refused, it must be; a route that ignores it (a resume position
        // that is not one) answers as documented all the same.
        const expected = wrong.startsWith('credentials') ? 401 : refusedByRoute(op, call) ? 400 : undefined;
        if (expected && doc.paths[op.path][op.method].responses[String(expected)]) expect(answer.status, `wrong ${wrong}: ${answer.text}`).toBe(expected);
      }),
      { numRuns: RUNS },
    );
  });
});
