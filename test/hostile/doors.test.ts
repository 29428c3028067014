import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { db } from '@/lib/db/client';
import { signIn } from '@/lib/auth/users';
import { createApiToken } from '@/lib/auth/tokens';
import { safeReturnPath } from '@/lib/auth/redirect';
import { readJsonBody, toErrorResponse } from '@/lib/http/respond';
import { cancelBackend } from '@/lib/locks/unblock';
import { actorOf, apiRequest, resetAuth, userWithSession, userWithToken } from '../auth-helpers';
import { session } from '../barriers';
import { makeIntent, resetDatabase, untyped } from '../helpers';
import { request, resetRequest, SAME_ORIGIN } from '../next-request';
import { apiRoute } from '@/lib/http/api-router';

/**
 * The hostile-traffic suite for the doors behind the front door (the front door itself: gate.test.ts; against the
 * real server: e2e/hostile.spec.ts). Each class of the outside review, several variants each: the answer is a 4xx
 * in the error envelope (or, for server actions, an error result), never a 5xx or a throw, and the database is
 * exactly as before.
 */
// A server action's request: signed out, from the console's own page, unless a case says otherwise.
vi.mock('next/headers', () => import('../next-request').then((m) => m.nextHeaders));
vi.mock('next/cache', () => import('../next-request').then((m) => m.nextCache));
vi.mock('next/navigation', () => import('../next-request').then((m) => m.nextNavigation));

const { GET: listIntents, POST: createIntent } = apiRoute('/api/intents');
const { GET: getLocks } = apiRoute('/api/locks');
const { GET: getTimeline } = apiRoute('/api/intents/{id}/timeline');
const { GET: getAudit } = apiRoute('/api/audit');
const { GET: getRecentEvents } = apiRoute('/api/console/events/recent');
const { GET: getCounts } = apiRoute('/api/console/intents/counts');
const { GET: getHolders } = apiRoute('/api/console/locks/holders');
const { POST: postStatus } = apiRoute('/api/intents/{id}/status');
const { POST: postBulkStatus } = apiRoute('/api/intents/bulk-status');
const { GET: getAuditLog } = apiRoute('/api/audit');
const actions = {
  ...(await import('@/app/actions/auth')),
  ...(await import('@/app/actions/intents')),
  ...(await import('@/app/actions/locks')),
  ...(await import('@/app/actions/replay')),
  ...(await import('@/app/actions/tokens')),
  ...(await import('@/app/actions/users')),
  ...(await import('@/app/actions/pipeline')),
  ...(await import('@/app/actions/workers')),
  ...(await import('@/app/actions/bulk')),
};

async function snapshot() {
  const rows = await db().$queryRaw<{ t: string; n: bigint }[]>`
    SELECT 'intents' AS t, count(*) + coalesce(sum(version), 0) AS n FROM intents
    UNION ALL SELECT 'corrections', count(*) FROM corrections
    UNION ALL SELECT 'audit', count(*) FROM audit_events
    UNION ALL SELECT 'users', count(*) + coalesce(sum(length(array_to_string(roles, ','))), 0) + count(*) FILTER (WHERE disabled) FROM users
    UNION ALL SELECT 'tokens', count(*) + count(*) FILTER (WHERE revoked_at IS NOT NULL) FROM api_tokens
    UNION ALL SELECT 'sessions', count(*) FROM sessions
    UNION ALL SELECT 'sign_in_attempts', count(*) FROM sign_in_attempts
    UNION ALL SELECT 'workers_paused', count(*) FILTER (WHERE paused) FROM worker_control
    UNION ALL SELECT 'work', count(*) + count(*) FILTER (WHERE state = 'cancelled') FROM intent_work
    UNION ALL SELECT 'pipeline_runs', count(*) FROM pipeline_runs
    UNION ALL SELECT 'bulk_batches', count(*) FROM bulk_batches`;
  return Object.fromEntries(rows.map((r) => [r.t, Number(r.n)]));
}

async function expect4xx(response: Response, code?: string) {
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(response.status).toBeLessThan(500);
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(typeof body.error.message).toBe('string');
  if (code) expect(body.error.code).toBe(code);
  return body;
}

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const ID = '00000000-0000-4000-8000-000000000001';

let token: string;
let oncall: Awaited<ReturnType<typeof userWithSession>>;
let before: Record<string, number>;

beforeAll(async () => {
  await resetDatabase();
  await resetAuth();
  token = (await userWithToken(['viewer', 'operator', 'reviewer', 'oncall', 'admin'])).token;
  oncall = await userWithSession(['oncall', 'admin', 'operator', 'reviewer', 'viewer']);
  await makeIntent('NORMALIZED');
});

afterAll(() => resetRequest());
beforeEach(async () => {
  resetRequest();
  before = await snapshot();
});

async function unchanged() {
  expect(await snapshot()).toEqual(before);
}

describe('hostile traffic at the doors', () => {
  it('NUL and unpaired surrogates in search text on the counts and list routes', async () => {
    for (const q of ['\u0000', 'a\u0000b', '%00', '\u0000'.repeat(50)]) {
      const url = new URL('http://localhost/api/console/intents/counts');
      url.searchParams.set('q', q === '%00' ? '\u0000' : q);
      await expect4xx(await getCounts(apiRequest(url.pathname + url.search, { token }), undefined), 'invalid_request');
      const list = new URL('http://localhost/api/intents');
      list.searchParams.set('q', q === '%00' ? '\u0000' : q);
      await expect4xx(await listIntents(apiRequest(list.pathname + list.search, { token }), undefined), 'invalid_request');
    }
    await unchanged();
  });

  it('cursors that decode to out-of-range or impossible dates', async () => {
    const cursors = [
      cursorOf({ u: '+275760-09-13T00:00:00.000Z', i: ID }),
      cursorOf({ u: '-271821-04-20T00:00:00.000Z', i: ID }),
      cursorOf({ u: '0000-01-01T00:00:00.000Z', i: ID }),
      cursorOf({ u: '1969-12-31T23:59:59.999Z', i: ID }),
      cursorOf({ u: '2024-13-45T99:99:99Z', i: ID }),
      cursorOf({ u: '10000-01-01T00:00:00Z', i: ID }),
      cursorOf({ u: 1e300, i: ID }),
      cursorOf(null),
      cursorOf({ u: '2024-01-01T00:00:00Z', i: 'not-a-uuid' }),
      'not base64 at all!!',
    ];
    for (const cursor of cursors) {
      const body = await expect4xx(await listIntents(apiRequest(`/api/intents?cursor=${encodeURIComponent(cursor)}`, { token }), undefined), 'invalid_request');
      expect(JSON.stringify(body)).toContain('cursor');
    }
    // A real date in range is still a valid cursor.
    expect((await listIntents(apiRequest(`/api/intents?cursor=${cursorOf({ u: '2024-01-01T00:00:00.000Z', i: ID })}`, { token }), undefined)).status).toBe(200);
    await unchanged();
  });

  it('a parameter an endpoint does not take is a 400 naming it, on endpoints that take no query as on those that do', async () => {
    const { GET: getIntent } = apiRoute('/api/intents/{id}');
    const { GET: replayRuns } = apiRoute('/api/console/replay/runs');
    const { GET: health } = apiRoute('/api/health');
    for (const [answer, field] of [
      [await getIntent(apiRequest(`/api/intents/${ID}?expand=all`, { token }), { params: Promise.resolve({ id: ID }) }), 'expand'],
      [await replayRuns(apiRequest('/api/console/replay/runs?limit=abc', { token }), undefined), 'limit'],
      [await health(apiRequest('/api/health?verbose=1'), undefined), 'verbose'],
      [await listIntents(apiRequest('/api/intents?limt=5', { token }), undefined), 'limt'],
      // One value per parameter: the last of several was taken silently.
      [await listIntents(apiRequest('/api/intents?status=RECEIVED&status=FAILED', { token }), undefined), 'given more than once'],
    ] as const) {
      const body = await expect4xx(answer, 'invalid_request');
      expect(JSON.stringify(body)).toContain(field);
    }
    // Without credentials, the missing credentials come first.
    expect((await replayRuns(apiRequest('/api/console/replay/runs?limit=abc'), undefined)).status).toBe(401);
    await unchanged();
  });

  it('lax numbers: hex, padded, exponent, fractional and huge values are refused, not coerced or rounded', async () => {
    for (const limit of ['0x10', ' 5', '5 ', '1e2', '5.0', '+5', '-1', '0', '99999999999999999999', '', '0b11', 'Infinity', 'NaN', '５']) {
      const body = await expect4xx(await listIntents(apiRequest(`/api/intents?limit=${encodeURIComponent(limit)}`, { token }), undefined), 'invalid_request');
      expect(JSON.stringify(body)).toContain('limit');
      await expect4xx(await getLocks(apiRequest(`/api/locks?limit=${encodeURIComponent(limit)}`, { token }), undefined));
      const params = { params: Promise.resolve({ id: ID }) };
      await expect4xx(await getTimeline(apiRequest(`/api/intents/${ID}/timeline?limit=${encodeURIComponent(limit)}`, { token }), params), 'invalid_request');
      await expect4xx(await getAudit(apiRequest(`/api/audit?limit=${encodeURIComponent(limit)}`, { token }), undefined), 'invalid_request');
      await expect4xx(await getRecentEvents(apiRequest(`/api/console/events/recent?limit=${encodeURIComponent(limit)}`, { token }), undefined), 'invalid_request');
    }
    expect((await listIntents(apiRequest('/api/intents?limit=5', { token }), undefined)).status).toBe(200);
    await unchanged();
  });

  it('out-of-range and lax pids on unblock, through the domain and the actions', async () => {
    const actor = actorOf(oncall.user, 'session');
    for (const pid of ['0x5F8', ' 1528', '1528 ', '1e3', '1528.0', '-1', '0', '2147483648', '99999999999999999999', '9007199254740993', 'abc', '']) {
      let refused: unknown;
      await cancelBackend(actor, { pid, reason: 'hostile suite' }).catch((e: unknown) => (refused = e));
      expect(refused).toMatchObject({ code: 'invalid_request', httpStatus: 400 });
      const form = new FormData();
      form.set('pid', pid);
      form.set('reason', 'hostile suite');
      request.cookie = oncall.cookie;
      const state = await actions.cancelBackendAction({ status: 'idle' }, form);
      expect(state).toMatchObject({ status: 'error', code: 'invalid_request' });
    }
    request.cookie = oncall.cookie;
    for (const pid of [0, -5, 1.5, 2 ** 31, Number.MAX_SAFE_INTEGER + 2, NaN, '1e3', null, { pid: 1 }]) {
      expect(await actions.unblockImpactAction(untyped(pid))).toMatchObject({ code: 'invalid_request' });
    }
    await unchanged();
  });

  it('NUL in sign-in usernames and token names', async () => {
    for (const username of ['ad\u0000min', '\u0000', 'admin\u0000', '\ud800admin']) {
      let refused: unknown;
      await signIn({ username, password: 'whatever password' }).catch((e: unknown) => (refused = e));
      expect(refused).toMatchObject({ code: 'invalid_request', httpStatus: 400 });
    }
    const actor = actorOf(oncall.user, 'session');
    for (const name of ['ci\u0000token', '\u0000', 'x\udc00']) {
      let refused: unknown;
      await createApiToken({ name }, actor).catch((e: unknown) => (refused = e));
      expect(refused).toMatchObject({ code: 'invalid_request', httpStatus: 400 });
    }
    await unchanged();
  });

  it('cookie-authenticated server actions from another origin, or without one, are refused by the action itself', async () => {
    // What bare `next start` lets through (no front door of ours): the action must refuse it on its own.
    const intent = await makeIntent('NORMALIZED');
    before = await snapshot();
    request.cookie = oncall.cookie;
    const foreign: Record<string, string>[] = [
      { host: 'localhost:3000' },
      { host: 'localhost:3000', origin: 'https://evil.example' },
      { host: 'localhost:3000', origin: 'null' },
      { host: 'localhost:3000', origin: 'http://localhost:3000.evil.example' },
      { host: 'localhost:3000', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { host: 'localhost:3000', 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of foreign) {
      request.headers = { 'user-agent': 'vitest', ...headers };
      const password = new FormData();
      password.set('currentPassword', 'correct horse battery staple');
      password.set('newPassword', 'another horse battery staple');
      password.set('confirmPassword', 'another horse battery staple');
      const tokenForm = new FormData();
      tokenForm.set('name', 'cross-site');
      const results = [
        await actions.changeIntentStatusAction({ id: intent.id, status: 'PROCESSED' }),
        await actions.createTokenAction({ status: 'idle' }, tokenForm),
        await actions.changePasswordAction({ status: 'idle' }, password).catch((e: { to?: string }) => ({ redirectedTo: e.to })),
      ];
      for (const [i, result] of results.entries()) {
        const r = result as { ok?: boolean; code?: string; error?: { code: string } };
        expect({ headers, i, code: r.error?.code ?? r.code }).toEqual({ headers, i, code: 'csrf_rejected' });
      }
    }
    await unchanged();
    // The same call from the console's own page goes through (the refusals above are about the origin alone).
    for (const headers of [SAME_ORIGIN, { host: 'localhost:3000', 'sec-fetch-site': 'same-origin' }]) {
      request.headers = headers;
      const other = await makeIntent('NORMALIZED');
      expect(await actions.changeIntentStatusAction({ id: other.id, status: 'PROCESSED' })).toMatchObject({ ok: true });
    }
  });

  it('the Workers page’s actions refuse lax values naming the field, and change nothing', async () => {
    request.cookie = oncall.cookie;
    const intent = await makeIntent('RECEIVED');
    before = await snapshot();
    for (const paused of ['true', 'yes', 1, 0, null, 'false', [true], { value: true }]) {
      const result = (await actions.setWorkersPausedAction({ paused })) as { ok: boolean; error?: { code: string; details: { fields: { field: string }[] } } };
      expect({ paused, code: result.error?.code }).toEqual({ paused, code: 'invalid_request' });
      expect(result.error!.details.fields.map((f) => f.field)).toEqual(['paused']);
    }
    for (const intentId of [intent.id.toUpperCase() + 'x', 42, '', null, [intent.id]]) {
      for (const act of [actions.retryNowAction, actions.cancelRetryAction]) {
        const result = (await act({ intentId })) as { ok: boolean; error?: { code: string; details: { fields: { field: string }[] } } };
        expect(result.error?.code).toBe('invalid_request');
        expect(result.error!.details.fields.map((f) => f.field)).toEqual(['intentId']);
      }
    }
    for (const mode of ['failfast', 1, null]) {
      const result = (await actions.runPipelineAction({ id: intent.id, mode })) as { ok: boolean; error?: { code: string; details: { fields: { field: string }[] } } };
      expect(result.error?.code).toBe('invalid_request');
      expect(result.error!.details.fields.map((f) => f.field)).toEqual(['mode']);
    }
    await unchanged();
    // The form's own values go through.
    expect(await actions.setWorkersPausedAction({ paused: false })).toMatchObject({ ok: true, data: { paused: false } });
  });

  it('text that cannot be stored is refused by one rule at every door: bulk batches, status, audit, unblock', async () => {
    const intent = await makeIntent('NORMALIZED');
    before = await snapshot();
    request.cookie = oncall.cookie;
    const operator = actorOf(oncall.user, 'session');
    const { startBatch } = await import('@/lib/bulk/batches');
    const { listAudit } = await import('@/lib/audit/log');
    for (const text of ['\ud800', 'lone \udc00 low', 'a\u0000b', 'x\ud83d', '\udfff\ud800']) {
      const fields = (r: unknown) => ((r as { error?: { details?: { fields?: { field: string }[] } } }).error?.details?.fields ?? []).map((f) => f.field);
      // A bulk batch by filter: its reason, and the search it filters by (the action door and the domain).
      const byReason = await actions.startBatchAction({ filter: { status: 'NORMALIZED' }, to: 'PROCESSED', reason: text });
      expect({ text, code: (byReason as { error?: { code: string } }).error?.code, fields: fields(byReason) }).toEqual({ text, code: 'invalid_request', fields: ['reason'] });
      const byFilter = await actions.startBatchAction({ filter: { q: text }, to: 'PROCESSED', reason: 'fine' });
      expect(fields(byFilter)).toEqual(['filter.q']);
      await expect(startBatch(operator, { filter: {}, to: 'PROCESSED', reason: text }, { run: false })).rejects.toMatchObject({ code: 'invalid_request', httpStatus: 400 });
      expect(fields(await actions.previewBatchAction({ filter: { q: text }, to: 'PROCESSED' }))).toEqual(['filter.q']);
      // The same reason through the status API and the bulk API.
      const status = await postStatus(apiRequest(`/api/intents/${intent.id}/status`, { method: 'POST', token, body: { status: 'PROCESSED', reason: text } }), { params: Promise.resolve({ id: intent.id }) });
      expect(JSON.stringify(await expect4xx(status, 'invalid_request'))).toContain('reason');
      const bulk = await postBulkStatus(apiRequest('/api/intents/bulk-status', { method: 'POST', token, body: { ids: [intent.id], status: 'PROCESSED', reason: text } }), undefined);
      expect(JSON.stringify(await expect4xx(bulk, 'invalid_request'))).toContain('reason');
      // The audit log's actor filter: the page's own read (which shows a DomainError's message) and the API. A URL
      // carries a lone surrogate as U+FFFD (text, if odd), so only NUL reaches the API's query intact.
      await expect(listAudit({ actor: text })).rejects.toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'actor' }] } });
      if (text.includes('\u0000')) {
        const audit = new URL('http://localhost/api/audit');
        audit.searchParams.set('actor', text);
        expect(JSON.stringify(await expect4xx(await getAuditLog(apiRequest(audit.pathname + audit.search, { token }), undefined), 'invalid_request'))).toContain('actor');
      }
      // Stopping a backend: its reason is audited too.
      await expect(cancelBackend(operator, { pid: 1234, reason: `because ${text}` })).rejects.toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'reason' }] } });
    }
    // The Intents page drops a search it could not run rather than failing the page.
    const { parseIntentFilters } = await import('@/lib/console/filters');
    expect(parseIntentFilters({ q: 'a\u0000b', source: '\ud800' })).toMatchObject({ q: '', source: null });
    await unchanged();
    // A well-formed reason, astral characters included, still goes through.
    expect(await actions.changeIntentStatusAction({ id: intent.id, status: 'PROCESSED', reason: 'partner 🚚 late' })).toMatchObject({ ok: true });
  });

  it('server actions refuse fields that are not their form’s, naming them, and change nothing', async () => {
    request.cookie = oncall.cookie;
    const intent = await makeIntent('NORMALIZED');
    before = await snapshot();
    const cases: [string, () => Promise<unknown>, string[]][] = [
      ['pause with an actor', () => actions.setWorkersPausedAction({ paused: true, actor: 'someone-else' }), ['actor']],
      ['resume with two extras', () => actions.setWorkersPausedAction({ paused: false, changedBy: 'x', force: true }), ['changedBy', 'force']],
      ['pause with a prototype key', () => actions.setWorkersPausedAction(JSON.parse('{"paused":true,"__proto__":{"admin":true}}')), ['__proto__']],
      ['retry with a version', () => actions.retryNowAction({ intentId: intent.id, version: 3 }), ['version']],
      ['status with an actor', () => actions.changeIntentStatusAction({ id: intent.id, status: 'PROCESSED', actor: 'admin' }), ['actor']],
      ['pipeline with bridges', () => actions.runPipelineAction({ id: intent.id, bridges: ['output'] }), ['bridges']],
    ];
    for (const [name, call, expected] of cases) {
      const result = (await call()) as { ok: boolean; error?: { code: string; details: { fields: { field: string; message: string }[] } } };
      expect({ name, code: result.error?.code, fields: result.error?.details.fields.map((f) => f.field) }).toEqual({ name, code: 'invalid_request', fields: expected });
      expect(result.error!.details.fields[0].message).toBe('is not a known field');
    }
    await unchanged();
  });

  it('server actions called with arguments that are not their form', async () => {
    request.cookie = oncall.cookie;
    const odd: unknown[] = [undefined, null, 'a string', 42, [1, 2], { username: 'admin', password: 'x' }, new Blob(['x'])];
    for (const arg of odd) {
      const results: unknown[] = [
        await actions.signInAction({ status: 'idle' }, untyped(arg)),
        await actions.createTokenAction({ status: 'idle' }, untyped(arg)),
        await actions.revokeTokenAction({ status: 'idle' }, untyped(arg)),
        await actions.createUserAction({ status: 'idle' }, untyped(arg)),
        await actions.setRolesAction({ status: 'idle' }, untyped(arg)),
        await actions.setDisabledAction({ status: 'idle' }, untyped(arg)),
        await actions.cancelBackendAction({ status: 'idle' }, untyped(arg)),
        await actions.terminateBackendAction({ status: 'idle' }, untyped(arg)),
        await actions.changeIntentStatusAction(arg),
        await actions.bulkChangeStatusAction(arg),
        await actions.correctIntentAction(arg),
        await actions.startReplayAction(arg),
        await actions.cancelReplayAction(arg),
        await actions.setWorkersPausedAction(arg),
        await actions.retryNowAction(arg),
        await actions.cancelRetryAction(arg),
        await actions.runPipelineAction(arg),
        await actions.retryPipelineAction(arg),
        await actions.answerWaitAction(arg),
      ];
      for (const [i, result] of results.entries()) {
        const r = result as { ok?: boolean; status?: string; code?: string; error?: { code: string } };
        const code = r.error?.code ?? r.code;
        expect({ i, arg: String(arg), failed: r.ok === false || r.status === 'error' }).toEqual({ i, arg: String(arg), failed: true });
        expect(code).not.toBe('internal_error');
      }
    }
    await unchanged();
  });

  it('bodies: oversized whatever the encoding (counted while read), not UTF-8, declared too large', async () => {
    let pulled = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const chunked = new Request('http://localhost/api/intents', { method: 'POST', body: endless, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, duplex: 'half' } as RequestInit);
    await expect4xx(await createIntent(chunked, undefined), 'payload_too_large');
    // Reading stopped just past the limit: the rest of an endless upload was never pulled.
    expect(pulled).toBeLessThan(1024 * 1024 + 4 * chunk.byteLength);

    const declared = apiRequest('/api/intents', { token, body: { payload: {} }, headers: { 'content-length': String(600 * 1024 * 1024) } });
    await expect4xx(await createIntent(declared, undefined), 'payload_too_large');
    const notUtf8 = new Request('http://localhost/api/intents', { method: 'POST', body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } });
    await expect4xx(await createIntent(notUtf8, undefined), 'invalid_request');
    let refused: unknown;
    await readJsonBody(new Request('http://localhost/x', { method: 'POST', body: 'x'.repeat(1024 * 1024 + 1), headers: { 'content-type': 'application/json' } })).catch((e: unknown) => (refused = e));
    expect(refused).toMatchObject({ code: 'payload_too_large', httpStatus: 413 });
    await unchanged();
  });

  it('a value the database cannot hold is a 400 at every door, even where a schema missed it', async () => {
    for (const value of ['a\u0000b']) {
      let err: unknown;
      await db().$queryRaw`SELECT ${value}::text`.catch((e: unknown) => (err = e));
      await expect4xx(toErrorResponse(err), 'invalid_request');
    }
    let err: unknown;
    await db().$queryRaw`SELECT ${'300000-01-01'}::timestamptz`.catch((e: unknown) => (err = e));
    await expect4xx(toErrorResponse(err), 'invalid_request');
    err = undefined;
    await db().$queryRaw`SELECT ${'99999999999'}::int`.catch((e: unknown) => (err = e));
    await expect4xx(toErrorResponse(err), 'invalid_request');
    await unchanged();
  });
});

describe('query text of lock holders, wherever they are named', () => {
  it('is masked for everyone but on-call: the holders route, 423 answers from the API and from server actions', async () => {
    const intent = await makeIntent('NORMALIZED');
    const holder = await session('psql');
    await holder.query('BEGIN');
    // A person's psql session holding the row, with data in its statement's literals.
    await holder.query(`SELECT id, 'card-4111111111111111' AS secret FROM intents WHERE id = '${intent.id}' FOR UPDATE`);
    try {
      const viewer = (await userWithToken(['viewer', 'operator'])).token;
      const holdersAs = async (t: string) => {
        const res = await getHolders(apiRequest(`/api/console/locks/holders?ids=${intent.id}`, { token: t }), undefined);
        expect(res.status).toBe(200);
        return ((await res.json()) as { holders: { query: string }[] }).holders;
      };
      const masked = await holdersAs(viewer);
      expect(masked).toHaveLength(1);
      expect(masked[0].query).toContain('FOR UPDATE');
      expect(masked[0].query).not.toContain('4111');
      expect((await holdersAs(token))[0].query).toContain('card-4111111111111111'); // on-call sees it whole

      const refusedAs = async (t: string) => {
        const res = await postStatus(apiRequest(`/api/intents/${intent.id}/status`, { method: 'POST', token: t, body: { status: 'PROCESSED', nowait: true } }), { params: Promise.resolve({ id: intent.id }) });
        expect(res.status).toBe(423);
        return ((await res.json()) as { error: { details: { holders: { query: string }[] } } }).error.details.holders;
      };
      const maskedRefusal = await refusedAs(viewer);
      expect(maskedRefusal.length).toBeGreaterThan(0);
      for (const h of maskedRefusal) expect(h.query).not.toContain('4111');
      expect((await refusedAs(token)).map((h) => h.query).join('\n')).toContain('card-4111111111111111');

      const operator = await userWithSession(['operator']);
      request.cookie = operator.cookie;
      const fromAction = (await actions.changeIntentStatusAction({ id: intent.id, status: 'PROCESSED', nowait: true })) as { ok: false; error: { code: string; details: { holders: { query: string }[] } } };
      expect(fromAction.error.code).toBe('lock_timeout');
      expect(fromAction.error.details.holders.length).toBeGreaterThan(0);
      for (const h of fromAction.error.details.holders) expect(h.query).not.toContain('4111');
      request.cookie = oncall.cookie;
      const whole = (await actions.changeIntentStatusAction({ id: intent.id, status: 'PROCESSED', nowait: true })) as typeof fromAction;
      expect(whole.error.details.holders.map((h) => h.query).join('\n')).toContain('card-4111111111111111');
    } finally {
      await holder.query('ROLLBACK');
    }
  });
});

describe('redirect targets stay on the console', () => {
  it.each([
    '/%09/evil.example',
    '/\t/evil.example',
    '//evil.example',
    '/\\evil.example',
    '/%5Cevil.example',
    '/%5cevil.example',
    '\\\\evil.example',
    'https://evil.example',
    'HTTPS://evil.example/',
    'javascript:alert(1)',
    '/%2F%2Fevil.example',
    '%2F%2Fevil.example',
    '/%252F%252Fevil.example',
    '/%0d%0aSet-Cookie:%20x=1',
    '/\r\nLocation: https://evil.example',
    '/%E2%80%A8evil',
    '/\u0000',
    '/%00',
    '/%ZZ',
    ' /intents',
    '/intents\n',
    'intents',
    '',
    '/'.repeat(3000),
  ])('%j → /', (next) => {
    expect(safeReturnPath(next)).toBe('/');
  });

  it.each([
    ['/intents', '/intents'],
    ['/intents/00000000-0000-4000-8000-000000000001', '/intents/00000000-0000-4000-8000-000000000001'],
    ['/intents?status=RECEIVED&q=caf%C3%A9', '/intents?status=RECEIVED&q=caf%C3%A9'],
    ['/locks#top', '/locks#top'],
    ['/a/../intents', '/intents'],
  ])('%j stays %j', (next, expected) => {
    expect(safeReturnPath(next)).toBe(expected);
  });

  it('non-strings are refused', () => {
    for (const v of [undefined, null, 42, ['/intents'], { toString: () => '/intents' }]) expect(safeReturnPath(v)).toBe('/');
  });

  it('sign-in with a hostile next goes home, not away', async () => {
    const { makeUser } = await import('../auth-helpers');
    await makeUser(['viewer'], { username: 'redirect-ruth' });
    for (const next of ['/%09/evil.example', '//evil.example', '/\\evil.example', 'https://evil.example', '/\r\nX: y']) {
      const form = new FormData();
      form.set('username', 'redirect-ruth');
      form.set('password', 'correct horse battery staple');
      form.set('next', next);
      let to: string | undefined;
      await actions.signInAction({ status: 'idle' }, form).catch((e: { to?: string }) => (to = e.to));
      expect(to).toBe('/');
    }
  });
});

describe('Swagger UI’s assets', () => {
  it('are the two files it needs; any other name, prototype keys included, is a plain 404 that logs nothing', async () => {
    const { GET: asset } = await import('@/app/api-docs/assets/[file]/route');
    const logged = vi.spyOn(console, 'error');
    try {
      for (const file of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', '..%2Fpackage.json', '../package.json', 'index.html', 'swagger-ui.css.map', '']) {
        const res = await asset(new Request(`http://localhost/api-docs/assets/${encodeURIComponent(file)}`), { params: Promise.resolve({ file }) });
        expect({ file, status: res.status, text: await res.text() }).toEqual({ file, status: 404, text: 'Not found' });
      }
      expect(logged).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
    }
    const css = await asset(new Request('http://localhost/api-docs/assets/swagger-ui.css'), { params: Promise.resolve({ file: 'swagger-ui.css' }) });
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
  });
});

describe('OPTIONS agrees with the 405s', () => {
  it.each([
    ['/api/intents', async () => apiRoute('/api/intents')],
    ['/api/intents/bulk-status', async () => apiRoute('/api/intents/bulk-status')],
    ['/api/events', async () => apiRoute('/api/events')],
    ['/api/locks', async () => apiRoute('/api/locks')],
    ['/api/health', async () => apiRoute('/api/health')],
    ['/api/metrics', async () => apiRoute('/api/metrics')],
  ] as const)('%s', async (path, load) => {
    const route = (await load()) as unknown as Record<string, (r: Request, c?: unknown) => Promise<Response>>;
    const options = await route.OPTIONS(new Request(`http://localhost${path}`, { method: 'OPTIONS' }));
    expect(options.status).toBe(204);
    const allowed = options.headers.get('allow')!.split(', ');
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      const refused = (await route[method]?.(new Request(`http://localhost${path}`, { method }), undefined))?.status === 405;
      expect({ method, refused }).toEqual({ method, refused: !allowed.includes(method) });
    }
  });
});
