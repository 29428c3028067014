import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { toErrorResponse } from '@/lib/http/respond';
import { assertSameOrigin } from '@/lib/auth/csrf';
import { sessionCookieName } from '@/lib/auth/cookies';
import { requireMetricsAccess, requireRequestActor } from '@/lib/auth/request';
import { createSession } from '@/lib/auth/sessions';
import type { Permission } from '@/lib/auth/permissions';
import { apiRequest, BASE_URL, resetAuth, userWithSession, userWithToken } from '../auth-helpers';

/** Runs the door as a route handler would and returns what the client would get. */
async function answer(request: Request, permission: Permission): Promise<{ status: number; code?: string; name?: string; message?: string }> {
  try {
    const actor = await requireRequestActor(request, permission);
    return { status: 200, name: actor.name };
  } catch (err) {
    const res = toErrorResponse(err);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(Object.keys(body)).toEqual(['error']);
    return { status: res.status, code: body.error.code, message: body.error.message };
  }
}

describe('requireRequestActor on crafted requests', () => {
  beforeEach(resetAuth);

  it('401 without credentials', async () => {
    expect(await answer(apiRequest('/api/intents'), 'intents.read')).toMatchObject({ status: 401, code: 'unauthenticated' });
  });

  it('401 for an Authorization header that is not a Bearer token, or a bad token — never falling back to the cookie', async () => {
    const { cookie } = await userWithSession(['admin']);
    for (const header of ['Basic YWRtaW46YWRtaW4=', 'Bearer', 'Bearer ', 'bearer bc_nope', 'Token bc_x', 'Bearer a b', '']) {
      const res = await answer(apiRequest('/api/intents', { cookie, headers: { authorization: header } }), 'intents.read');
      expect(res, header).toMatchObject({ status: 401, code: 'unauthenticated' });
    }
  });

  it('200 with a token whose owner holds the permission, 403 otherwise', async () => {
    const viewer = await userWithToken(['viewer']);
    const operator = await userWithToken(['operator']);
    expect(await answer(apiRequest('/api/intents', { token: viewer.token }), 'intents.read')).toMatchObject({ status: 200, name: viewer.user.username });
    expect(await answer(apiRequest('/api/intents/x/status', { token: viewer.token, body: {} }), 'intents.status')).toMatchObject({ status: 403, code: 'forbidden' });
    expect(await answer(apiRequest('/api/intents/x/status', { token: operator.token, body: {} }), 'intents.status')).toMatchObject({ status: 200, name: operator.user.username });
    // The scheme is case-insensitive, as HTTP says.
    expect(await answer(apiRequest('/api/intents', { headers: { authorization: `bearer ${viewer.token}` } }), 'intents.read')).toMatchObject({ status: 200 });
  });

  it('a 403 tells people which role would allow it and keeps the permission name in details', async () => {
    const viewer = await userWithToken(['viewer', 'oncall']);
    const res = toErrorResponse(await requireRequestActor(apiRequest('/api/intents', { token: viewer.token, body: {} }), 'intents.create').catch((e: unknown) => e));
    const body = (await res.json()) as { error: { code: string; message: string; details: unknown } };
    expect(res.status).toBe(403);
    expect(body.error.message).toBe('Creating intents needs the operator role (you have: viewer, on-call). Ask an administrator if you need it.');
    expect(body.error.message).not.toContain('intents.create');
    expect(body.error.details).toEqual({ permission: 'intents.create', requiredRoles: ['operator'], roles: ['viewer', 'oncall'] });
  });

  it('accepts the session cookie for reads, and for same-origin writes', async () => {
    const { cookie, user } = await userWithSession(['operator']);
    expect(await answer(apiRequest('/api/intents', { cookie }), 'intents.read')).toMatchObject({ status: 200, name: user.username });
    expect(await answer(apiRequest('/api/intents', { cookie, body: {} }), 'intents.create')).toMatchObject({ status: 200, name: user.username });
  });

  it('403 csrf_rejected for cookie-authenticated writes from another site or without Origin, before looking at the session', async () => {
    const { cookie } = await userWithSession(['operator']);
    const cases: Record<string, string>[] = [
      {},
      { origin: 'https://evil.example' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: 'http://other.localhost:3000' },
      { origin: 'null' },
      { origin: 'http://localhost:3001' },
    ];
    for (const headers of cases) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        const res = await answer(apiRequest('/api/intents', { method, cookie, sameOrigin: false, headers, body: method === 'DELETE' ? undefined : {} }), 'intents.create');
        expect(res, `${method} ${JSON.stringify(headers)}`).toMatchObject({ status: 403, code: 'csrf_rejected' });
      }
    }
    // A forged request with a made-up cookie is refused the same way: no session lookup, nothing written.
    const before = await db().session.findFirst();
    await answer(apiRequest('/api/intents', { cookie: `${sessionCookieName()}=${'A'.repeat(43)}`, sameOrigin: false, body: {} }), 'intents.create');
    expect(await db().session.findFirst()).toEqual(before);
  });

  it('lets Bearer requests write without Origin (no ambient credential to forge)', async () => {
    const { token } = await userWithToken(['operator']);
    expect(await answer(apiRequest('/api/intents', { token, body: {}, headers: { origin: 'https://elsewhere.example' } }), 'intents.create')).toMatchObject({ status: 200 });
  });

  it('401 for an expired or signed-out session cookie', async () => {
    const { user } = await userWithSession(['viewer']);
    const past = new Date(Date.now() - 100 * 3_600_000);
    const { secret } = await createSession(user.id, {}, past);
    expect(await answer(apiRequest('/api/intents', { cookie: `${sessionCookieName()}=${secret}` }), 'intents.read')).toMatchObject({ status: 401, code: 'unauthenticated' });
    expect(await answer(apiRequest('/api/intents', { cookie: `${sessionCookieName()}=garbage` }), 'intents.read')).toMatchObject({ status: 401 });
  });

  it('403 password_change_required for a session with a one-time password; its tokens keep working', async () => {
    const { cookie } = await userWithSession(['viewer'], { mustChangePassword: true });
    expect(await answer(apiRequest('/api/intents', { cookie }), 'intents.read')).toMatchObject({ status: 403, code: 'password_change_required' });
    const t = await userWithToken(['viewer'], { mustChangePassword: true });
    expect(await answer(apiRequest('/api/intents', { token: t.token }), 'intents.read')).toMatchObject({ status: 200 });
  });
});

describe('CSRF check', () => {
  const opts = { trustedOrigins: ['https://console.example.com'], trustProxy: false };
  const req = (method: string, headers: Record<string, string>, url = `${BASE_URL}/api/x`) => new Request(url, { method, headers });

  it('lets safe methods through', () => {
    for (const m of ['GET', 'HEAD', 'OPTIONS']) expect(() => assertSameOrigin(req(m, {}), opts)).not.toThrow();
  });

  it('accepts same-origin fetch metadata, a matching Origin, a Host match, and configured origins', () => {
    expect(() => assertSameOrigin(req('POST', { 'sec-fetch-site': 'same-origin' }), opts)).not.toThrow();
    expect(() => assertSameOrigin(req('POST', { origin: BASE_URL }), opts)).not.toThrow();
    expect(() => assertSameOrigin(req('POST', { origin: 'https://console.example.com', 'sec-fetch-site': 'cross-site' }), opts)).not.toThrow();
    expect(() => assertSameOrigin(new Request('http://internal:3000/api/x', { method: 'POST', headers: { origin: 'http://localhost:3000', host: 'localhost:3000' } }), opts)).not.toThrow();
  });

  it('trusts X-Forwarded-Host only with TRUST_PROXY', () => {
    const headers = { origin: 'https://console.corp', 'x-forwarded-host': 'console.corp', 'x-forwarded-proto': 'https' };
    expect(() => assertSameOrigin(req('POST', headers), opts)).toThrow(/not this console/);
    expect(() => assertSameOrigin(req('POST', headers), { ...opts, trustProxy: true })).not.toThrow();
  });
});

describe('metrics access', () => {
  it('is open without METRICS_TOKEN and wants exactly that token with it', () => {
    expect(() => requireMetricsAccess(apiRequest('/api/metrics'), undefined)).not.toThrow();
    const secret = 'metrics-secret-0123456789';
    expect(() => requireMetricsAccess(apiRequest('/api/metrics'), secret)).toThrow(/METRICS_TOKEN/);
    expect(() => requireMetricsAccess(apiRequest('/api/metrics', { headers: { authorization: 'Bearer wrong' } }), secret)).toThrow();
    expect(() => requireMetricsAccess(apiRequest('/api/metrics', { headers: { authorization: `Bearer ${secret}x` } }), secret)).toThrow();
    expect(() => requireMetricsAccess(apiRequest('/api/metrics', { headers: { authorization: `Bearer ${secret}` } }), secret)).not.toThrow();
  });
});
