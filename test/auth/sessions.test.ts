import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createSession, pruneExpiredSessions, revokeSession, revokeUserSessions, rotateSession, validateSession } from '@/lib/auth/sessions';
import { sha256Hex } from '@/lib/auth/secrets';
import { makeUser, resetAuth } from '../auth-helpers';
import { eventually } from '../wait';

const HOUR = 3_600_000;
const policy = { ttlMs: 8 * HOUR, maxMs: 72 * HOUR };
const t0 = new Date('2030-01-01T00:00:00Z');
const at = (ms: number) => new Date(t0.getTime() + ms);

describe('sessions', () => {
  beforeEach(resetAuth);

  it('stores only the sha256 of the cookie secret', async () => {
    const { user } = await makeUser(['viewer']);
    const { secret, session } = await createSession(user.id, { ip: '10.0.0.1', userAgent: 'test' }, t0, policy);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session.id).toBe(sha256Hex(secret));
    const rows = await db().$queryRaw<{ row: string }[]>`SELECT row_to_json(s)::text AS row FROM sessions s`;
    expect(rows).toHaveLength(1);
    expect(rows[0].row).not.toContain(secret);
  });

  it('validates to the user, with roles as the user row has them now', async () => {
    const { user } = await makeUser(['viewer']);
    const { secret } = await createSession(user.id, {}, t0, policy);
    const valid = await validateSession(secret, at(1000), policy);
    expect(valid?.actor).toMatchObject({ name: user.username, userId: user.id, roles: ['viewer'], via: 'session' });
    // Changed outside the console's own functions: the notification drops what this process cached (bounded wait).
    await db().user.update({ where: { id: user.id }, data: { roles: ['viewer', 'operator'] } });
    const roles = await eventually('the role change to reach the session', async () => {
      const now = (await validateSession(secret, at(2000), policy))?.actor.roles;
      return now?.length !== 1 && (now ?? []);
    });
    expect(roles).toEqual(['viewer', 'operator']);
  });

  it('slides the idle expiry on use, but never past the absolute limit', async () => {
    const { user } = await makeUser(['viewer']);
    const { secret, session } = await createSession(user.id, {}, t0, policy);
    expect(session.expiresAt).toEqual(at(8 * HOUR));
    expect(session.absoluteExpiresAt).toEqual(at(72 * HOUR));
    // Used every 7 hours, it lives on…
    for (let h = 7; h < 72; h += 7) {
      const v = await validateSession(secret, at(h * HOUR), policy);
      expect(v, `alive at ${h} h`).not.toBeNull();
      expect(v!.session.expiresAt).toEqual(at(Math.min((h + 8) * HOUR, 72 * HOUR)));
    }
    // …until the absolute limit.
    expect(await validateSession(secret, at(72 * HOUR), policy)).toBeNull();
    expect(await db().session.count()).toBe(0);
  });

  it('expires after the idle lifetime without use', async () => {
    const { user } = await makeUser(['viewer']);
    const { secret } = await createSession(user.id, {}, t0, policy);
    expect(await validateSession(secret, at(8 * HOUR - 1), policy)).not.toBeNull();
    // That use slid it; 8 h of silence after it ends it.
    expect(await validateSession(secret, at(16 * HOUR), policy)).toBeNull();
  });

  it('does not write on every request: the sliding update happens at most once a minute', async () => {
    const { user } = await makeUser(['viewer']);
    const { secret, session } = await createSession(user.id, {}, t0, policy);
    await validateSession(secret, at(30_000), policy);
    expect((await db().session.findUnique({ where: { id: session.id } }))!.lastSeenAt).toEqual(t0);
    await validateSession(secret, at(61_000), policy);
    expect((await db().session.findUnique({ where: { id: session.id } }))!.lastSeenAt).toEqual(at(61_000));
  });

  it('refuses malformed and unknown secrets without touching the database rows', async () => {
    for (const bad of [undefined, null, '', 'x', 'a'.repeat(42), 'a'.repeat(44), `${'a'.repeat(42)}!`, '../../etc/passwd']) {
      expect(await validateSession(bad as string, t0, policy)).toBeNull();
    }
    expect(await validateSession('A'.repeat(43), t0, policy)).toBeNull();
  });

  it('revokes one session, or all of a user’s sessions but the current one', async () => {
    const { user } = await makeUser(['viewer']);
    const a = await createSession(user.id, {}, t0, policy);
    const b = await createSession(user.id, {}, t0, policy);
    const c = await createSession(user.id, {}, t0, policy);
    expect(await revokeSession(a.secret)).toBe(true);
    expect(await revokeSession(a.secret)).toBe(false);
    expect(await validateSession(a.secret, t0, policy)).toBeNull();
    expect(await revokeUserSessions(user.id, b.session.id)).toBe(1);
    expect(await validateSession(b.secret, t0, policy)).not.toBeNull();
    expect(await validateSession(c.secret, t0, policy)).toBeNull();
  });

  it('rotates: the new secret works, the old one stops at once', async () => {
    const { user } = await makeUser(['viewer']);
    const old = await createSession(user.id, {}, t0, policy);
    const rotated = await rotateSession(old.secret, {}, at(1000), policy);
    expect(rotated).not.toBeNull();
    expect(rotated!.secret).not.toBe(old.secret);
    expect(await validateSession(old.secret, at(2000), policy)).toBeNull();
    expect(await validateSession(rotated!.secret, at(2000), policy)).not.toBeNull();
    expect(await rotateSession(old.secret, {}, at(3000), policy)).toBeNull();
  });

  it('ends for a disabled user', async () => {
    const { user } = await makeUser(['viewer']);
    const { secret } = await createSession(user.id, {}, t0, policy);
    await db().user.update({ where: { id: user.id }, data: { disabled: true } });
    expect(await validateSession(secret, t0, policy)).toBeNull();
  });

  it('prunes expired rows', async () => {
    const { user } = await makeUser(['viewer']);
    await createSession(user.id, {}, t0, policy);
    const live = await createSession(user.id, {}, at(10 * HOUR), policy);
    expect(await pruneExpiredSessions(at(9 * HOUR))).toBe(1);
    expect(await validateSession(live.secret, at(11 * HOUR), policy)).not.toBeNull();
  });
});
