import { db, type Tx } from '@/lib/db/client';
import { isSqlState, SQLSTATE } from '@/lib/db/sqlstate';
import { NotFoundError, ValidationError } from '@/lib/shared/errors';
import { parseInput } from '@/lib/shared/validation';
import { recordAuthEvent } from './events';
import { InvalidCredentialsError, RateLimitedError, requirePermission, UserConflictError } from './errors';
import { generatePassword, hashPassword, verifyAgainstDummy, verifyPassword } from './password';
import type { Role } from './permissions';
import {
  attemptKey,
  clearSignInFailures,
  lockSignInKeys,
  lockSignInUsername,
  recordSignInAttempt,
  signInFailureStates,
  signInLimits,
  signInRetryAfter,
  type SignInFailureState,
  type SignInLimits,
} from './rate-limit';
import { createUserSchema, newPasswordSchema, ROLES_REQUIRED, rolesSchema, signInSchema, userIdSchema, userListSchema } from './schemas';
import { forgetVerifiedCredentials } from './token-cache';
import { createSession, revokeUserSessions, type SessionInfo, type SessionPolicy, sessionPolicy } from './sessions';
import type { AuthActor, ClientInfo, UserView } from './types';

/**
 * Console users: sign-in, and the admin operations of the users page. Every command takes the acting user and
 * checks its permission itself, so a door that forgot to cannot do more than the table allows.
 */
type UserRow = { id: string; username: string; roles: string[]; disabled: boolean; mustChangePassword: boolean; createdAt: Date; createdBy: string | null; lastSignInAt: Date | null };

function view(row: UserRow): UserView {
  return {
    id: row.id,
    username: row.username,
    roles: row.roles as Role[],
    disabled: row.disabled,
    mustChangePassword: row.mustChangePassword,
    createdAt: row.createdAt.toISOString(),
    createdBy: row.createdBy,
    lastSignInAt: row.lastSignInAt?.toISOString() ?? null,
  };
}

const userSelect = { id: true, username: true, roles: true, disabled: true, mustChangePassword: true, createdAt: true, createdBy: true, lastSignInAt: true } as const;

// ── sign-in ─────────────────────────────────────────────────────────────────────────────────────────────────────

export type SignInResult = { secret: string; session: SessionInfo; user: UserView };

/**
 * Checks a username and password under the sign-in throttle (lib/auth/rate-limit.ts) and opens a session. Unknown
 * names, wrong passwords and disabled accounts all fail the same way and take the same time: a disabled account
 * answers "invalid credentials" whether or not the password was right, so the answer reveals neither. A name that
 * matches no user is recorded only as a digest (it may be a password typed into the wrong field).
 */
export async function signIn(
  input: unknown,
  client: ClientInfo = {},
  options: { now?: Date; limits?: SignInLimits; policy?: SessionPolicy } = {},
): Promise<SignInResult> {
  const { username, password } = parseInput(signInSchema, input);
  const now = options.now ?? new Date();
  const limits = options.limits ?? signInLimits();
  const ip = client.ip ?? null;

  const outcome = await db().$transaction(async (tx) => {
    const found = await tx.user.findUnique({ where: { username }, select: { id: true } });
    const key = attemptKey(username, !!found);
    await lockSignInKeys(tx, key, ip);
    const retryAfter = await signInRetryAfter(tx, key, ip, now, limits);
    if (retryAfter > 0) return { kind: 'limited' as const, retryAfter };
    const user = found ? await tx.user.findUnique({ where: { id: found.id }, select: { ...userSelect, passwordHash: true } }) : null;
    const passwordOk = user ? await verifyPassword(user.passwordHash, password) : await verifyAgainstDummy(password);
    const ok = passwordOk && !!user && !user.disabled;
    await recordSignInAttempt(tx, { username: key, ip, succeeded: ok, at: now });
    if (!ok || !user) return { kind: 'invalid' as const, key, disabled: !!user?.disabled };
    await tx.user.update({ where: { id: user.id }, data: { lastSignInAt: now } });
    return { kind: 'ok' as const, user };
  });

  if (outcome.kind === 'limited') throw new RateLimitedError(outcome.retryAfter);
  if (outcome.kind === 'invalid') {
    // The security record says the account was disabled (an admin wants to know), never whether the password matched.
    await recordAuthEvent({ action: 'auth.sign_in_failed', actor: outcome.key, subject: outcome.key, ip, details: outcome.disabled ? { reason: 'disabled' } : undefined });
    throw new InvalidCredentialsError();
  }
  const { secret, session } = await createSession(outcome.user.id, client, now, options.policy ?? sessionPolicy());
  await recordAuthEvent({ action: 'auth.sign_in', actor: username, subject: username, ip });
  return { secret, session, user: view({ ...outcome.user, lastSignInAt: now }) };
}

// ── own password ────────────────────────────────────────────────────────────────────────────────────────────────

/** Replaces the actor's password (the current one is required) and signs out their other sessions. */
export async function changeOwnPassword(input: { currentPassword: unknown; newPassword: unknown }, actor: AuthActor): Promise<void> {
  const newPassword = parseInput(newPasswordSchema, input.newPassword, 'newPassword');
  const currentPassword = typeof input.currentPassword === 'string' ? input.currentPassword : '';
  const user = await db().user.findUnique({ where: { id: actor.userId }, select: { passwordHash: true, disabled: true } });
  if (!user || user.disabled) throw new NotFoundError('Your account');
  if (!(await verifyPassword(user.passwordHash, currentPassword))) {
    throw new ValidationError([{ field: 'currentPassword', message: 'is not your current password' }]);
  }
  if (currentPassword === newPassword) throw new ValidationError([{ field: 'newPassword', message: 'must differ from the current password' }]);
  await db().user.update({ where: { id: actor.userId }, data: { passwordHash: await hashPassword(newPassword), mustChangePassword: false, passwordChangedAt: new Date() } });
  await revokeUserSessions(actor.userId, actor.via === 'session' ? actor.credentialId : undefined);
  await recordAuthEvent({ action: 'auth.password_changed', actor: actor.name, subject: actor.name });
}

// ── administration (users.manage) ───────────────────────────────────────────────────────────────────────────────

/** One page of the users page's list: at most `USERS_PAGE_SIZE` users, by username. */
export type UserPage = {
  users: UserView[];
  /** How many users match the search (all users without one). */
  matching: number;
  /** Enabled admins in the whole table, not only on this page: the last one may not drop their own admin role. */
  enabledAdmins: number;
  /** The username to continue after, when more match. */
  next: string | null;
};

export const USERS_PAGE_SIZE = 50;

/**
 * The users, a page at a time, optionally those whose name contains `q`. A page, not the whole table: an
 * organisation's hundreds of users, each with their role and account forms, made the page slow to render and to use.
 */
export async function listUsers(actor: AuthActor, input: unknown = {}): Promise<UserPage> {
  requirePermission(actor, 'users.manage');
  const { q, after } = parseInput(userListSchema, input);
  const where = q ? { username: { contains: q, mode: 'insensitive' as const } } : {};
  const [rows, matching, enabledAdmins] = await Promise.all([
    db().user.findMany({
      select: userSelect,
      where: after ? { ...where, username: { ...where.username, gt: after } } : where,
      orderBy: { username: 'asc' },
      take: USERS_PAGE_SIZE + 1,
    }),
    db().user.count({ where }),
    db().user.count({ where: { roles: { has: 'admin' }, disabled: false } }),
  ]);
  const page = rows.slice(0, USERS_PAGE_SIZE);
  return { users: page.map(view), matching, enabledAdmins, next: rows.length > USERS_PAGE_SIZE ? page[page.length - 1].username : null };
}

/**
 * Creates a user with a generated one-time password (returned once; they must change it at first sign-in).
 * Creating internal users in code (bootstrap, tests) goes through `insertUser` instead.
 */
export async function createUser(input: unknown, actor: AuthActor): Promise<{ user: UserView; oneTimePassword: string }> {
  requirePermission(actor, 'users.manage');
  const { username, roles } = parseInput(createUserSchema, input);
  const oneTimePassword = generatePassword();
  const user = await insertUser({ username, roles, password: oneTimePassword, mustChangePassword: true, createdBy: actor.name });
  await recordAuthEvent({ action: 'user.created', actor: actor.name, subject: username, details: { roles } });
  return { user, oneTimePassword };
}

/** Inserts a user row; the caller has already decided who may. A taken username is a 409; no roles is a 400. */
export async function insertUser(
  input: { username: string; roles: Role[]; password: string; mustChangePassword: boolean; createdBy: string },
  client: Tx | ReturnType<typeof db> = db(),
): Promise<UserView> {
  // The same rule as the forms', for users made in code too: a user without roles could sign in and open nothing.
  if (input.roles.length === 0) throw new ValidationError([{ field: 'roles', message: ROLES_REQUIRED }]);
  try {
    const row = await client.user.create({
      data: { username: input.username, roles: input.roles, passwordHash: await hashPassword(input.password), mustChangePassword: input.mustChangePassword, createdBy: input.createdBy },
      select: userSelect,
    });
    return view(row);
  } catch (err) {
    if (isSqlState(err, SQLSTATE.uniqueViolation)) {
      throw new UserConflictError(`A user named "${input.username}" already exists.`, { username: input.username });
    }
    throw err;
  }
}

export async function setUserRoles(userId: unknown, roles: unknown, actor: AuthActor): Promise<UserView> {
  requirePermission(actor, 'users.manage');
  const id = parseInput(userIdSchema, userId, 'userId');
  const nextRoles = parseInput(rolesSchema, roles, 'roles');
  const { before, after } = await changeUserGuarded(id, (user) => ({ roles: nextRoles, disabled: user.disabled }), { roles: nextRoles });
  await recordAuthEvent({ action: 'user.roles_changed', actor: actor.name, subject: after.username, details: { from: before.roles, to: after.roles } });
  return after;
}

/** Disables (signing the user out everywhere; their tokens stop working) or enables a user. Not yourself. */
export async function setUserDisabled(userId: unknown, disabled: unknown, actor: AuthActor): Promise<UserView> {
  requirePermission(actor, 'users.manage');
  const id = parseInput(userIdSchema, userId, 'userId');
  if (typeof disabled !== 'boolean') throw new ValidationError([{ field: 'disabled', message: 'must be true or false' }]);
  if (disabled && id === actor.userId) throw new UserConflictError('You cannot disable your own account; ask another admin.');
  const { after } = await changeUserGuarded(id, (user) => ({ roles: user.roles, disabled }), { disabled });
  if (disabled) await revokeUserSessions(id);
  await recordAuthEvent({ action: disabled ? 'user.disabled' : 'user.enabled', actor: actor.name, subject: after.username });
  return after;
}

/** Issues a new one-time password (shown once) and signs the user out everywhere. */
export async function resetUserPassword(userId: unknown, actor: AuthActor): Promise<{ user: UserView; oneTimePassword: string }> {
  requirePermission(actor, 'users.manage');
  const id = parseInput(userIdSchema, userId, 'userId');
  const oneTimePassword = generatePassword();
  const passwordHash = await hashPassword(oneTimePassword);
  // One statement that returns no row for a missing user, so no Prisma error code has to be read for it.
  const [row] = await db().user.updateManyAndReturn({ where: { id }, data: { passwordHash, mustChangePassword: true, passwordChangedAt: new Date() }, select: userSelect });
  if (!row) throw new NotFoundError(`User ${id}`);
  forgetVerifiedCredentials();
  await revokeUserSessions(id);
  await recordAuthEvent({ action: 'user.password_reset', actor: actor.name, subject: row.username });
  return { user: view(row), oneTimePassword };
}

/** Failed sign-ins in the window per username, and whether each is locked out somewhere (for the users page). */
export async function signInFailuresByUsername(actor: AuthActor, now = new Date(), limits?: SignInLimits): Promise<Map<string, SignInFailureState>> {
  requirePermission(actor, 'users.manage');
  return signInFailureStates(db(), now, limits);
}

/**
 * "Unlock sign-in": forgets the user's failed sign-ins from every address, so none of the limits that count them
 * holds the user back any longer. Under the username's sign-in lock, so it cannot interleave with a sign-in's
 * check-and-record; audited in the same transaction.
 */
export async function unlockSignIn(userId: unknown, actor: AuthActor): Promise<{ user: UserView; clearedFailures: number }> {
  requirePermission(actor, 'users.manage');
  const id = parseInput(userIdSchema, userId, 'userId');
  const row = await db().user.findUnique({ where: { id }, select: userSelect });
  if (!row) throw new NotFoundError(`User ${id}`);
  const clearedFailures = await db().$transaction(async (tx) => {
    await lockSignInUsername(tx, row.username);
    const cleared = await clearSignInFailures(tx, row.username);
    await recordAuthEvent({ action: 'user.sign_in_unlocked', actor: actor.name, subject: row.username, details: { clearedFailures: cleared } }, tx);
    return cleared;
  });
  return { user: view(row), clearedFailures };
}

/**
 * Applies a change to a user unless it would leave no enabled admin. The check and the write are serialised
 * under one advisory lock, so two admins demoting each other at the same moment cannot both succeed.
 */
async function changeUserGuarded(
  id: string,
  next: (user: { roles: string[]; disabled: boolean }) => { roles: string[]; disabled: boolean },
  data: { roles?: Role[]; disabled?: boolean },
): Promise<{ before: UserView; after: UserView }> {
  const changed = await db().$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended('bridge:users:admins', 0))`;
    const before = await tx.user.findUnique({ where: { id }, select: userSelect });
    if (!before) throw new NotFoundError(`User ${id}`);
    const wasActiveAdmin = before.roles.includes('admin') && !before.disabled;
    const planned = next(before);
    const staysActiveAdmin = planned.roles.includes('admin') && !planned.disabled;
    if (wasActiveAdmin && !staysActiveAdmin) {
      const others = await tx.user.count({ where: { id: { not: id }, disabled: false, roles: { has: 'admin' } } });
      if (others === 0) throw new UserConflictError('This is the only enabled admin: make someone else an admin first.');
    }
    const after = await tx.user.update({ where: { id }, data, select: userSelect });
    return { before: view(before), after: view(after) };
  });
  // Their API tokens act with the new roles (or not at all) from this answer on, here and, by notification, elsewhere.
  forgetVerifiedCredentials();
  return changed;
}
