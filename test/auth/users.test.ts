import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createSession, validateSession } from '@/lib/auth/sessions';
import { verifyApiToken } from '@/lib/auth/tokens';
import { changeOwnPassword, createUser, listUsers, resetUserPassword, setUserDisabled, setUserRoles, signIn, USERS_PAGE_SIZE } from '@/lib/auth/users';
import { actorOf, makeUser, resetAuth, TEST_PASSWORD, userWithToken } from '../auth-helpers';

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

describe('user administration', () => {
  beforeEach(resetAuth);

  it('creates users with a one-time password they must change, and refuses a taken name', async () => {
    const admin = actorOf((await makeUser(['admin'])).user);
    const { user, oneTimePassword } = await createUser({ username: 'Kim', roles: ['reviewer', 'viewer', 'reviewer'] }, admin);
    expect(user).toMatchObject({ username: 'kim', roles: ['viewer', 'reviewer'], mustChangePassword: true, createdBy: admin.name });
    const signed = await signIn({ username: 'kim', password: oneTimePassword });
    expect(signed.user.mustChangePassword).toBe(true);
    expect(await codeOf(createUser({ username: 'KIM', roles: ['viewer'] }, admin))).toBe('user_conflict');
    expect(await codeOf(createUser({ username: 'bad name!', roles: ['viewer'] }, admin))).toBe('invalid_request');
    expect(await codeOf(createUser({ username: 'lee', roles: ['root'] }, admin))).toBe('invalid_request');
    const events = await db().authEvent.findMany({ where: { action: 'user.created' } });
    expect(events).toHaveLength(1);
    expect(JSON.stringify(events.map((e) => ({ ...e, id: String(e.id) })))).not.toContain(oneTimePassword);
  });

  it('refuses a user without roles, and a bad username, with messages that name the field and the rule', async () => {
    const admin = actorOf((await makeUser(['admin'])).user);
    const refusal = async (p: Promise<unknown>) => (await p.then(() => null, (e: unknown) => e)) as { code: string; message: string; details: { fields: { field: string; message: string }[] } };
    const noRoles = await refusal(createUser({ username: 'norole', roles: [] }, admin));
    expect(noRoles.code).toBe('invalid_request');
    expect(noRoles.details.fields).toEqual([{ field: 'roles', message: 'must include at least one role (viewer, to read everything and change nothing)' }]);
    expect(await codeOf(createUser({ username: 'norole' }, admin))).toBe('invalid_request');
    const badName = await refusal(createUser({ username: 'bad name!', roles: ['viewer'] }, admin));
    expect(badName.message).toMatch(/^Invalid request: username may not contain a space, "!": use 2 to 64 characters: letters a–z, digits, dot, underscore or hyphen/);
    expect(badName.details.fields).toHaveLength(1);
    expect((await refusal(createUser({ username: '-x', roles: ['viewer'] }, admin))).message).toMatch(/^Invalid request: username must start with a letter or digit/);
    expect((await refusal(createUser({ username: 'x', roles: ['viewer'] }, admin))).message).toMatch(/^Invalid request: username is too short/);
    // Saving roles: none is refused the same way, and nothing changes.
    const { user } = await makeUser(['operator']);
    const cleared = await refusal(setUserRoles(user.id, [], admin));
    expect(cleared.details.fields).toEqual([{ field: 'roles', message: 'must include at least one role (viewer, to read everything and change nothing)' }]);
    expect((await db().user.findUnique({ where: { id: user.id } }))!.roles).toEqual(['operator']);
    // Users made in code follow the same rule.
    expect(await codeOf(makeUser([]))).toBe('invalid_request');
    expect(await db().user.count({ where: { roles: { isEmpty: true } } })).toBe(0);
    expect(await db().authEvent.count({ where: { action: { in: ['user.created', 'user.roles_changed'] } } })).toBe(0);
  });

  it('is for users.manage only', async () => {
    for (const role of ['viewer', 'operator', 'reviewer', 'oncall'] as const) {
      const actor = actorOf((await makeUser([role])).user);
      const target = (await makeUser(['viewer'])).user;
      expect(await codeOf(listUsers(actor)), role).toBe('forbidden');
      expect(await codeOf(createUser({ username: `x-${role}`, roles: ['admin'] }, actor))).toBe('forbidden');
      expect(await codeOf(setUserRoles(target.id, ['admin'], actor))).toBe('forbidden');
      expect(await codeOf(setUserDisabled(target.id, true, actor))).toBe('forbidden');
      expect(await codeOf(resetUserPassword(target.id, actor))).toBe('forbidden');
    }
    expect(await db().user.count({ where: { roles: { has: 'admin' } } })).toBe(0);
  });

  it('lists users a page at a time, by name, searched by a fragment of it; a bad search names its field', async () => {
    const admin = actorOf((await makeUser(['admin'], { username: 'zz-admin' })).user);
    await makeUser(['admin'], { username: 'zz-off-admin', disabled: true });
    // Rows straight into the table: the listing reads no password, and hashing 60 of them would only cost time.
    await db().user.createMany({
      data: Array.from({ length: 60 }, (_, i) => ({ username: `ops-${String(i).padStart(2, '0')}`, roles: ['viewer'], passwordHash: 'x', createdBy: 'test' })),
    });
    const first = await listUsers(admin);
    expect(first.users).toHaveLength(USERS_PAGE_SIZE);
    expect(first.users[0].username).toBe('ops-00');
    expect(first.matching).toBe(62);
    // The last admin's guard reads the whole table, not the page (neither admin is on this one).
    expect(first.enabledAdmins).toBe(1);
    expect(first.next).toBe(`ops-${USERS_PAGE_SIZE - 1}`);
    const second = await listUsers(admin, { after: first.next });
    expect(second.users.map((u) => u.username)).toEqual([...Array.from({ length: 10 }, (_, i) => `ops-${50 + i}`), 'zz-admin', 'zz-off-admin']);
    expect(second.next).toBeNull();

    const found = await listUsers(admin, { q: ' OPS-5 ' });
    expect(found.users.map((u) => u.username)).toEqual(Array.from({ length: 10 }, (_, i) => `ops-5${i}`));
    expect(found.matching).toBe(10);
    expect((await listUsers(admin, { q: 'nobody' })).matching).toBe(0);

    const refused = (await listUsers(admin, { q: 'x'.repeat(65) }).then(() => null, (e: unknown) => e)) as { code: string; details: { fields: { field: string }[] } };
    expect(refused.code).toBe('invalid_request');
    expect(refused.details.fields.map((f) => f.field)).toEqual(['q']);
  });

  it('role changes apply to live sessions and tokens at once', async () => {
    const admin = actorOf((await makeUser(['admin'])).user);
    const target = await userWithToken(['viewer']);
    const { secret } = await createSession(target.user.id);
    await setUserRoles(target.user.id, ['operator'], admin);
    expect((await validateSession(secret))!.actor.roles).toEqual(['operator']);
    expect((await verifyApiToken(target.token))!.roles).toEqual(['operator']);
  });

  it('disabling signs the user out everywhere and stops their tokens; enabling restores tokens', async () => {
    const admin = actorOf((await makeUser(['admin'])).user);
    const target = await userWithToken(['operator']);
    const { secret } = await createSession(target.user.id);
    await setUserDisabled(target.user.id, true, admin);
    expect(await validateSession(secret)).toBeNull();
    expect(await db().session.count({ where: { userId: target.user.id } })).toBe(0);
    expect(await verifyApiToken(target.token)).toBeNull();
    await setUserDisabled(target.user.id, false, admin);
    expect(await verifyApiToken(target.token)).not.toBeNull();
    expect(await codeOf(setUserDisabled(admin.userId, true, admin))).toBe('user_conflict');
  });

  it('never leaves the console without an enabled admin, even when two admins demote each other at once', async () => {
    const a = actorOf((await makeUser(['admin'])).user);
    expect(await codeOf(setUserRoles(a.userId, ['viewer'], a))).toBe('user_conflict');
    const b = actorOf((await makeUser(['admin', 'viewer'])).user);
    const results = await Promise.all([codeOf(setUserRoles(b.userId, ['viewer'], a)), codeOf(setUserRoles(a.userId, ['viewer'], b))]);
    expect(results.sort()).toEqual(['ok', 'user_conflict']);
    expect(await db().user.count({ where: { roles: { has: 'admin' }, disabled: false } })).toBe(1);
  });

  it('resets a password: shown once, old one and sessions dead, must be changed', async () => {
    const admin = actorOf((await makeUser(['admin'])).user);
    const { user } = await makeUser(['viewer'], { username: 'mo' });
    const { secret } = await createSession(user.id);
    const { oneTimePassword } = await resetUserPassword(user.id, admin);
    expect(await validateSession(secret)).toBeNull();
    expect(await codeOf(signIn({ username: 'mo', password: TEST_PASSWORD }))).toBe('invalid_credentials');
    expect((await signIn({ username: 'mo', password: oneTimePassword })).user.mustChangePassword).toBe(true);
    expect(await codeOf(resetUserPassword('00000000-0000-4000-8000-000000000000', admin))).toBe('not_found');
  });

  it('changes your own password: needs the current one, clears must-change, signs out other sessions', async () => {
    const { user } = await makeUser(['viewer'], { username: 'nia', mustChangePassword: true });
    const here = await createSession(user.id);
    const elsewhere = await createSession(user.id);
    const actor = (await validateSession(here.secret))!.actor;
    expect(await codeOf(changeOwnPassword({ currentPassword: 'wrong', newPassword: 'a brand new password' }, actor))).toBe('invalid_request');
    expect(await codeOf(changeOwnPassword({ currentPassword: TEST_PASSWORD, newPassword: 'short' }, actor))).toBe('invalid_request');
    expect(await codeOf(changeOwnPassword({ currentPassword: TEST_PASSWORD, newPassword: TEST_PASSWORD }, actor))).toBe('invalid_request');
    await changeOwnPassword({ currentPassword: TEST_PASSWORD, newPassword: 'a brand new password' }, actor);
    expect((await validateSession(here.secret))!.actor.mustChangePassword).toBe(false);
    expect(await validateSession(elsewhere.secret)).toBeNull();
    expect(await codeOf(signIn({ username: 'nia', password: 'a brand new password' }))).toBe('ok');
  });
});
