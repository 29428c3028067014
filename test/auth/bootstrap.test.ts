import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { bootstrapAuth } from '@/lib/auth/bootstrap';
import { ROLES } from '@/lib/auth/permissions';
import { revokeApiToken, verifyApiToken } from '@/lib/auth/tokens';
import { signIn } from '@/lib/auth/users';
import { resetAuth } from '../auth-helpers';

const bootstrapToken = 'bc_bootstrap-token-for-tests-0123456789abcdef';

describe('bootstrapAuth', () => {
  beforeEach(resetAuth);

  it('on an empty database creates `admin` with every role and a one-time password it returns once', async () => {
    const report = await bootstrapAuth({});
    expect(report.admin).toMatchObject({ created: true, username: 'admin', passwordSource: 'generated' });
    const password = report.admin.created ? report.admin.oneTimePassword! : '';
    expect(password).toHaveLength(20);
    expect(report.lines.join('\n')).toContain(password);
    const user = await db().user.findUnique({ where: { username: 'admin' } });
    expect(user).toMatchObject({ roles: [...ROLES], mustChangePassword: true, disabled: false });
    expect(user!.passwordHash).not.toContain(password);
    const signedIn = await signIn({ username: 'admin', password });
    expect(signedIn.user.mustChangePassword).toBe(true);

    // Idempotent: the second start creates nothing and prints no password.
    const again = await bootstrapAuth({});
    expect(again.admin).toEqual({ created: false });
    expect(again.lines.join('\n')).not.toContain(password);
    expect(await db().user.count()).toBe(1);
  });

  it('takes the admin’s name and password from the environment, without printing the password', async () => {
    const report = await bootstrapAuth({ adminUser: 'ops', adminPassword: 'from-the-environment-123' });
    expect(report.admin).toEqual({ created: true, username: 'ops', passwordSource: 'environment' });
    expect(report.lines.join('\n')).not.toContain('from-the-environment-123');
    expect((await signIn({ username: 'ops', password: 'from-the-environment-123' })).user.mustChangePassword).toBe(false);
    const later = await bootstrapAuth({ adminUser: 'ops', adminPassword: 'a-different-password-456' });
    expect(later.admin.created).toBe(false);
    expect(later.lines.join('\n')).toMatch(/only on an empty database/);
  });

  it('creates exactly one admin when several instances start at once', async () => {
    const reports = await Promise.all(Array.from({ length: 6 }, () => bootstrapAuth({})));
    expect(reports.filter((r) => r.admin.created)).toHaveLength(1);
    expect(await db().user.count()).toBe(1);
  });

  it('provisions CONSOLE_BOOTSTRAP_TOKEN as an admin token once, never printing it, and respects a revocation', async () => {
    const first = await bootstrapAuth({ bootstrapToken });
    expect(first.token).toBe('provisioned');
    expect(first.lines.join('\n')).not.toContain(bootstrapToken);
    expect(first.lines.join('\n')).toContain(bootstrapToken.slice(0, 11));
    const actor = await verifyApiToken(bootstrapToken);
    expect(actor).toMatchObject({ name: 'admin', roles: [...ROLES], via: 'token' });
    expect((await bootstrapAuth({ bootstrapToken })).token).toBe('already-present');
    expect(await db().apiToken.count()).toBe(1);

    await revokeApiToken(actor!.credentialId, actor!);
    const afterRevoke = await bootstrapAuth({ bootstrapToken });
    expect(afterRevoke.token).toBe('revoked');
    expect(await verifyApiToken(bootstrapToken)).toBeNull();
  });

  it('provisions the token under concurrent starts exactly once', async () => {
    const reports = await Promise.all(Array.from({ length: 5 }, () => bootstrapAuth({ bootstrapToken })));
    expect(reports.filter((r) => r.token === 'provisioned')).toHaveLength(1);
    expect(await db().apiToken.count()).toBe(1);
  });

  it('does not provision a token when no enabled admin exists', async () => {
    await bootstrapAuth({});
    const admin = await db().user.findFirstOrThrow();
    await db().user.update({ where: { id: admin.id }, data: { disabled: true } });
    expect((await bootstrapAuth({ bootstrapToken })).token).toBe('no-admin');
    expect(await verifyApiToken(bootstrapToken)).toBeNull();
  });
});
