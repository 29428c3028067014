import { beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '@/lib/auth/permissions';
import { apiRequest, resetAuth, userWithSession, userWithToken } from '../auth-helpers';
import { makeIntent, resetDatabase } from '../helpers';
import { DOORS } from './routes';

/**
 * The authorization matrix (docs/AUTH.md) for the JSON API: every door × every role × signed out, by API token and by
 * session cookie. The expectation is written from the role list of docs/AUTH.md, not read from the permission table:
 * viewer reads everything; operator changes statuses (single, bulk) and creates; reviewer corrects; release and admin
 * run the contention replay. Leases: operator and above take them — reviewers too, for their edit leases.
 */
const READS = ['intents.read', 'locks.read', 'contention.read', 'replay.read', 'audit.read'];
const MAY: Record<Role, (permission: string) => boolean> = {
  viewer: (p) => READS.includes(p),
  operator: (p) => [...READS, 'intents.create', 'intents.status', 'intents.bulk', 'pipeline.run', 'leases.use'].includes(p),
  reviewer: (p) => [...READS, 'intents.correct', 'leases.use'].includes(p),
  oncall: (p) => [...READS, 'leases.use'].includes(p),
  admin: (p) => [...READS, 'leases.use', 'replay.run'].includes(p),
  release: (p) => [...READS, 'replay.run'].includes(p),
};
const ROLES = Object.keys(MAY) as Role[];

let credentials: Record<Role, { token: string; cookie: string }>;

beforeAll(async () => {
  await resetDatabase();
  await resetAuth();
  credentials = {} as typeof credentials;
  for (const role of ROLES) {
    const { token } = await userWithToken([role]);
    const { cookie } = await userWithSession([role]);
    credentials[role] = { token, cookie };
  }
});

describe.each(DOORS)('$name', (door) => {
  it('refuses a signed-out caller with 401 and changes nothing', async () => {
    const intent = await makeIntent('NORMALIZED');
    const res = await door.call(apiRequest(door.path(intent.id), { method: door.method, body: door.validBody?.(intent.id) }), intent.id);
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe('unauthenticated');
  });

  describe.each(ROLES)('as %s', (role) => {
    it.each(['token', 'cookie'] as const)('by %s', async (via) => {
      const intent = await makeIntent('NORMALIZED');
      const cred = via === 'token' ? { token: credentials[role].token } : { cookie: credentials[role].cookie };
      const res = await door.call(apiRequest(door.path(intent.id), { method: door.method, body: door.validBody?.(intent.id), ...cred }), intent.id);
      if (MAY[role](door.permission)) {
        // Read a refusal's body for the failure message; a stream (SSE) is only opened, then closed.
        expect(res.status, res.status >= 300 ? await res.text() : '').toBeLessThan(300);
        await res.body?.cancel();
      } else {
        expect(res.status).toBe(403);
        const { error } = await res.json();
        expect(error.code).toBe('forbidden');
        // People read which role would allow it; programs read the permission's name in details.
        expect(error.message).toMatch(/needs (the [a-z-]+ role|one of the .+ roles) \(you have: /);
        expect(error.message).not.toContain(door.permission);
        expect(error.details).toMatchObject({ permission: door.permission, roles: [role] });
      }
    });
  });
});

describe('cookie-authenticated writes', () => {
  it.each(DOORS.filter((d) => d.method === 'POST'))('$name refuses a cross-site request (CSRF) with 403', async (door) => {
    const intent = await makeIntent('NORMALIZED');
    const res = await door.call(
      apiRequest(door.path(intent.id), {
        method: 'POST',
        body: door.validBody?.(intent.id),
        cookie: credentials.admin.cookie,
        sameOrigin: false,
        headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      }),
      intent.id,
    );
    expect(res.status).toBe(403);
    expect((await res.json()).error.code).toBe('csrf_rejected');
  });
});
