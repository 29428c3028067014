import { db } from '@/lib/db/client';
import { env } from '@/lib/env';
import { recordAuthEvent } from './events';
import { generatePassword } from './password';
import { ROLES } from './permissions';
import { pruneSignInAttempts } from './rate-limit';
import { pruneExpiredSessions } from './sessions';
import { displayPrefix, storeApiToken } from './tokens';
import { sha256Hex } from './secrets';
import { insertUser } from './users';

/**
 * First-run set-up, called by `npm start` (scripts/start.ts) after migrating and before serving:
 * - on an empty user table, creates the admin: CONSOLE_ADMIN_USER / CONSOLE_ADMIN_PASSWORD, or `admin` with a
 *   generated one-time password that is returned here to be printed once (it is stored only as a hash, and must
 *   be changed at first sign-in);
 * - with CONSOLE_BOOTSTRAP_TOKEN set, makes sure that token exists as an API token of an admin (unless someone
 *   revoked it in the console: a revocation is respected, not undone by the next restart).
 * Safe to run from several console instances at once: the work is serialised under an advisory lock.
 * It returns the lines to print; they never contain the bootstrap token or a password from the environment.
 */
export type BootstrapOptions = { adminUser?: string; adminPassword?: string; bootstrapToken?: string };

export type BootstrapReport = {
  lines: string[];
  admin: { created: false } | { created: true; username: string; passwordSource: 'environment' | 'generated'; oneTimePassword?: string };
  token: 'not-configured' | 'provisioned' | 'already-present' | 'revoked' | 'no-admin';
};

const BOOTSTRAP_LOCK = 'bridge:auth:bootstrap';

export async function bootstrapAuth(options: BootstrapOptions = fromEnv()): Promise<BootstrapReport> {
  const lines: string[] = [];
  const admin = await ensureAdmin(options);
  if (admin.created) {
    lines.push(
      admin.passwordSource === 'generated'
        ? `first run: created the admin user "${admin.username}" with this one-time password (shown only now; change it at first sign-in): ${admin.oneTimePassword}`
        : `first run: created the admin user "${admin.username}" with the password from CONSOLE_ADMIN_PASSWORD`,
    );
  } else if (options.adminUser || options.adminPassword) {
    lines.push('users already exist: CONSOLE_ADMIN_USER / CONSOLE_ADMIN_PASSWORD are used only on an empty database (they were ignored)');
  }
  const token = await ensureBootstrapToken(options);
  if (token.state === 'provisioned') lines.push(`CONSOLE_BOOTSTRAP_TOKEN: provisioned as an API token of admin "${token.owner}" (${token.prefix}…)`);
  if (token.state === 'revoked') lines.push(`CONSOLE_BOOTSTRAP_TOKEN (${token.prefix}…) was revoked in the console and stays revoked: set a new one to provision it`);
  if (token.state === 'no-admin') lines.push('CONSOLE_BOOTSTRAP_TOKEN is set but there is no enabled admin to own it: it was not provisioned');

  await pruneExpiredSessions().catch(() => 0);
  await pruneSignInAttempts(db()).catch(() => 0);
  return { lines, admin, token: token.state };
}

function fromEnv(): BootstrapOptions {
  const e = env();
  return { adminUser: e.CONSOLE_ADMIN_USER, adminPassword: e.CONSOLE_ADMIN_PASSWORD, bootstrapToken: e.CONSOLE_BOOTSTRAP_TOKEN };
}

/** Creates the first admin when there are no users at all; does nothing otherwise (idempotent). */
export async function ensureAdmin(options: BootstrapOptions = fromEnv()): Promise<BootstrapReport['admin']> {
  return db().$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${BOOTSTRAP_LOCK}, 0))`;
    if ((await tx.user.count()) > 0) return { created: false as const };
    const username = options.adminUser ?? 'admin';
    const generated = options.adminPassword ? undefined : generatePassword();
    // The first user holds every role: someone has to be able to do everything until the admin hands roles out.
    await insertUser({ username, roles: [...ROLES], password: options.adminPassword ?? generated!, mustChangePassword: !!generated, createdBy: 'system' }, tx);
    await recordAuthEvent({ action: 'bootstrap.admin_created', actor: 'system', subject: username, details: { passwordSource: generated ? 'generated' : 'environment' } }, tx);
    return generated
      ? { created: true as const, username, passwordSource: 'generated' as const, oneTimePassword: generated }
      : { created: true as const, username, passwordSource: 'environment' as const };
  });
}

type TokenOutcome = { state: 'not-configured' | 'no-admin' } | { state: 'provisioned' | 'already-present' | 'revoked'; prefix: string; owner: string };

async function ensureBootstrapToken(options: BootstrapOptions): Promise<TokenOutcome> {
  const token = options.bootstrapToken;
  if (!token) return { state: 'not-configured' };
  const prefix = displayPrefix(token);
  return db().$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${BOOTSTRAP_LOCK}, 0))`;
    const existing = await tx.apiToken.findUnique({ where: { tokenHash: sha256Hex(token) }, include: { user: { select: { username: true } } } });
    if (existing) return { state: existing.revokedAt ? 'revoked' : 'already-present', prefix, owner: existing.user.username } as const;
    const preferred = options.adminUser ?? 'admin';
    const admins = await tx.user.findMany({ where: { disabled: false, roles: { has: 'admin' } }, orderBy: { createdAt: 'asc' }, select: { id: true, username: true } });
    const owner = admins.find((a) => a.username === preferred) ?? admins[0];
    if (!owner) return { state: 'no-admin' } as const;
    // Under the advisory lock the existence check above cannot race another instance's insert.
    await storeApiToken({ userId: owner.id, name: 'bootstrap (CONSOLE_BOOTSTRAP_TOKEN)', token, createdBy: 'system' }, tx);
    await recordAuthEvent({ action: 'bootstrap.token_provisioned', actor: 'system', subject: owner.username, details: { prefix } }, tx);
    return { state: 'provisioned', prefix, owner: owner.username } as const;
  });
}
