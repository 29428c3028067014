import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { bulkStatusSchema, createIntentSchema, listIntentsSchema, reevaluateSchema, updateStatusSchema } from '@/lib/intents/schemas';
import { pipelineRequestSchema } from '@/lib/pipeline/rerun';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { makeIntent, resetDatabase } from '../helpers';
import { DOORS, type Door } from './routes';

/**
 * The doors' fuzz test: well over 1,000 generated malformed or hostile bodies, headers, query strings and ids
 * against every door of the JSON API, by a caller holding every role. Each must get a 4xx — never a 5xx — and the
 * database must be exactly as before. Inputs a schema would accept are filtered out (they are not malformed);
 * everything else is fair game: wrong types, unknown fields, NUL characters and lone surrogates, deep nesting,
 * prototype keys, huge strings, broken JSON, wrong content types, bogus credentials.
 */
const RUNS_PER_DOOR = 200;

let token: string;
let intentId: string;

async function snapshot() {
  const rows = await db().$queryRaw<{ t: string; n: bigint }[]>`
    SELECT 'intents' AS t, count(*) + coalesce(sum(version), 0) AS n FROM intents
    UNION ALL SELECT 'corrections', count(*) FROM corrections
    -- A replay run's start and finish are the baseline door's own setup (it pins a run it made), not the door's doing.
    UNION ALL SELECT 'audit', count(*) FROM audit_events WHERE action NOT IN ('replay_started', 'replay_finished')
    UNION ALL SELECT 'conflicts', count(*) FROM conflict_events
    UNION ALL SELECT 'idempotency', count(*) FROM idempotency_records`;
  return Object.fromEntries(rows.map((r) => [r.t, Number(r.n)]));
}

const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfffy', "'; DROP TABLE intents; --", '%_\\', '<script>alert(1)</script>', '__proto__', 'constructor'),
  fc.string({ minLength: 300, maxLength: 3000 }),
);

const deepJson = fc.integer({ min: 33, max: 200 }).map((depth) => {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = { nested: value };
  return value;
});

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue(),
  hostileString,
  deepJson,
  fc.dictionary(hostileString, fc.jsonValue(), { maxKeys: 4 }),
  fc.constant(JSON.parse('{"__proto__": {"polluted": true}}')),
);

/** An object shaped like the door's body, with any field replaced by something hostile or dropped, plus extras. */
function nearValidBody(door: Door, id: string): fc.Arbitrary<unknown> {
  const base = (door.validBody?.(id) ?? {}) as Record<string, unknown>;
  const fields = Object.keys(base).concat(['expectedVersion', 'idempotencyKey', 'nowait', 'metadata', 'payload', 'diff', 'ids', 'status']);
  return fc
    .record({
      overrides: fc.dictionary(fc.constantFrom(...fields), hostileValue, { maxKeys: 3 }),
      drop: fc.subarray(Object.keys(base)),
      extra: fc.option(fc.dictionary(hostileString, fc.jsonValue(), { minKeys: 1, maxKeys: 2 }), { nil: undefined }),
    })
    .map(({ overrides, drop, extra }) => {
      const body: Record<string, unknown> = { ...base, ...overrides, ...extra };
      for (const key of drop) delete body[key];
      return body;
    });
}

const SCHEMAS: Record<string, { safeParse: (v: unknown) => { success: boolean } }> = {
  'POST /api/intents': createIntentSchema,
  'POST /api/intents/:id/status': updateStatusSchema,
  'POST /api/intents/:id/reeval': reevaluateSchema,
  'POST /api/intents/bulk-status': bulkStatusSchema,
  'POST /api/intents/:id/pipeline': pipelineRequestSchema,
};

type Case = { kind: 'body'; body: unknown } | { kind: 'raw'; text: string; contentType: string } | { kind: 'query'; query: Record<string, string> } | { kind: 'id'; id: string } | { kind: 'auth'; header: string };

function casesFor(door: Door, id: string): fc.Arbitrary<Case> {
  const schema = SCHEMAS[door.name];
  const takesId = door.path('ID').includes('ID');
  const variants: fc.Arbitrary<Case>[] = [
    fc.oneof(fc.string(), fc.uuid().map((u) => `${u}x`), fc.constantFrom('', '..', '%00', 'not-a-uuid', '00000000-0000-0000-0000-000000000000')).map((bad) => ({ kind: 'id' as const, id: bad || 'x' })),
    fc.oneof(fc.string(), fc.constantFrom('Bearer', 'Bearer ', 'Basic abc', 'Bearer bc_forged', 'bearer \u0000')).map((header) => ({ kind: 'auth' as const, header })),
  ].slice(takesId ? 0 : 1);
  if (door.method === 'POST') {
    variants.push(
      fc.oneof(hostileValue, nearValidBody(door, id)).filter((body) => !schema.safeParse(body).success).map((body) => ({ kind: 'body' as const, body })),
      fc
        .record({
          text: fc.oneof(fc.string(), fc.constantFrom('{', '{"a":', '[1,2', 'null', '"str"', '{"payload": NaN}', '\u0000')),
          contentType: fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-8'),
        })
        .filter(({ text, contentType }) => {
          if (!contentType.startsWith('application/json')) return true;
          try {
            return !schema.safeParse(JSON.parse(text)).success;
          } catch {
            return true;
          }
        })
        .map(({ text, contentType }) => ({ kind: 'raw' as const, text, contentType })),
    );
  } else if (door.name === 'GET /api/intents') {
    variants.push(
      fc
        .dictionary(fc.constantFrom('status', 'q', 'limit', 'cursor', 'includeReplay', 'sort', 'x'), hostileString, { minKeys: 1, maxKeys: 3 })
        // Judge the query as the server will read it: URL encoding turns a lone surrogate into U+FFFD.
        .filter((query) => {
          const url = new URL('http://localhost/api/intents');
          for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
          return !listIntentsSchema.safeParse(Object.fromEntries(url.searchParams)).success;
        })
        .map((query) => ({ kind: 'query' as const, query })),
    );
  }
  return fc.oneof(...variants);
}

function requestFor(door: Door, id: string, c: Case): { request: Request; id: string } {
  const auth = { authorization: `Bearer ${token}` };
  switch (c.kind) {
    case 'body':
      return { request: apiRequest(door.path(id), { method: door.method, body: c.body, headers: auth }), id };
    case 'raw':
      return {
        request: new Request(new URL(door.path(id), 'http://localhost:3000'), { method: 'POST', headers: { ...auth, 'content-type': c.contentType }, body: c.text }),
        id,
      };
    case 'query': {
      const url = new URL(door.path(id), 'http://localhost:3000');
      for (const [k, v] of Object.entries(c.query)) url.searchParams.set(k, v);
      return { request: new Request(url, { headers: auth }), id };
    }
    case 'id':
      return { request: apiRequest(door.path(encodeURIComponent(c.id)), { method: door.method, body: door.validBody?.(c.id), headers: auth }), id: c.id };
    case 'auth': {
      const headers = new Headers();
      try {
        headers.set('authorization', c.header.trim() === '' ? 'Bearer' : c.header);
      } catch {
        headers.set('authorization', 'Bearer \u00ff');
      }
      return { request: new Request(new URL(door.path(id), 'http://localhost:3000'), { method: door.method, headers, body: door.method === 'POST' ? JSON.stringify(door.validBody?.(id) ?? {}) : undefined }), id };
    }
  }
}

beforeAll(async () => {
  await resetDatabase();
  await resetAuth();
  ({ token } = await userWithToken(['viewer', 'operator', 'reviewer', 'oncall', 'admin']));
  intentId = (await makeIntent('NORMALIZED')).id;
});

describe('fuzzing the JSON API', () => {
  it.each(DOORS.filter((d) => d.fuzz !== false))('$name answers every malformed request with a 4xx and changes nothing', async (door) => {
    const before = await snapshot();
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(casesFor(door, intentId), async (c) => {
        const { request, id } = requestFor(door, intentId, c);
        const res = await door.call(request, id);
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        expect(res.status, `${JSON.stringify(c).slice(0, 300)} → ${await res.clone().text()}`).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        const body = await res.json();
        expect(typeof body.error?.code).toBe('string');
        expect(typeof body.error?.message).toBe('string');
      }),
      { numRuns: RUNS_PER_DOOR },
    );
    expect(await snapshot()).toEqual(before);
    // Every kind of refusal was exercised, not just one.
    expect([...seen.keys()].some((s) => s === 401)).toBe(true);
    expect([...seen.keys()].some((s) => s === 400 || s === 404 || s === 413 || s === 415)).toBe(true);
  });
});

/** Text PostgreSQL cannot store, hidden inside bodies that are otherwise fine: refused as bad input, not a 500. */
const unstorable = fc.constantFrom('\u0000', 'ok\u0000', '\ud800', 'tail\udc00', '\udbff!');

function poison(body: Record<string, unknown>, bad: string, where: number): Record<string, unknown> {
  const keys = Object.keys(body);
  const key = keys[where % keys.length];
  const value = body[key];
  if (typeof value === 'string') return { ...body, [key]: `${value}${bad}` };
  if (Array.isArray(value)) return { ...body, [key]: [...value, bad] };
  if (value && typeof value === 'object') return { ...body, [key]: where % 2 ? { ...value, [`k${bad}`]: 1 } : { ...value, note: bad } };
  return { ...body, [key]: bad };
}

describe('unstorable text inside otherwise valid bodies', () => {
  it.each(DOORS.filter((d) => d.validBody))('$name refuses it with 400 and changes nothing', async (door) => {
    const before = await snapshot();
    await fc.assert(
      fc.asyncProperty(unstorable, fc.nat(), async (bad, where) => {
        const body = poison(door.validBody!(intentId) as Record<string, unknown>, bad, where);
        const res = await door.call(apiRequest(door.path(intentId), { method: 'POST', body, headers: { authorization: `Bearer ${token}` } }), intentId);
        expect(res.status, `${JSON.stringify(body)} → ${await res.clone().text()}`).toBe(400);
      }),
      { numRuns: 60 },
    );
    expect(await snapshot()).toEqual(before);
  });
});
