import { db } from '@/lib/db/client';
import { env } from '@/lib/env';
import type { Role } from './permissions';
import { randomSecret, sha256Hex } from './secrets';
import { cacheGeneration, cachedSession, forgetSession, forgetVerifiedCredentials, rememberSession, type SessionEntry } from './token-cache';
import type { AuthActor, ClientInfo } from './types';

/**
 * Server-side sessions in Postgres, so every console instance sees the same ones and a sign-out or a disabled
 * user takes effect everywhere at once. The cookie carries a 256-bit random secret; the row's id is its sha256.
 * Expiry slides: each use moves `expiresAt` to now + SESSION_TTL_HOURS, never past `absoluteExpiresAt`
 * (SESSION_MAX_HOURS after sign-in), after which the user signs in again.
 */
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** Sliding writes are skipped for requests this close together: one UPDATE a minute per session is plenty. */
const TOUCH_INTERVAL_MS = 60_000;

export type SessionPolicy = { ttlMs: number; maxMs: number };

export function sessionPolicy(): SessionPolicy {
  const e = env();
  return { ttlMs: e.SESSION_TTL_HOURS * 3_600_000, maxMs: e.SESSION_MAX_HOURS * 3_600_000 };
}

export type SessionInfo = { id: string; userId: string; createdAt: Date; lastSeenAt: Date; expiresAt: Date; absoluteExpiresAt: Date };

export type ValidSession = { session: SessionInfo; actor: AuthActor };

type SessionRow = {
  userId: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  absoluteExpiresAt: Date;
  username: string;
  roles: string[] | null;
  disabled: boolean;
  mustChangePassword: boolean;
};

function clip(value: string | null | undefined, max: number): string | null {
  return value ? value.slice(0, max) : null;
}

/** Starts a session; the returned secret goes into the cookie and is never stored. */
export async function createSession(userId: string, client: ClientInfo = {}, now = new Date(), policy = sessionPolicy()): Promise<{ secret: string; session: SessionInfo }> {
  const secret = randomSecret();
  const absoluteExpiresAt = new Date(now.getTime() + policy.maxMs);
  const expiresAt = new Date(Math.min(now.getTime() + policy.ttlMs, absoluteExpiresAt.getTime()));
  const session = await db().session.create({
    data: { id: sha256Hex(secret), userId, createdAt: now, lastSeenAt: now, expiresAt, absoluteExpiresAt, ip: clip(client.ip, 64), userAgent: clip(client.userAgent, 512) },
    select: { id: true, userId: true, createdAt: true, lastSeenAt: true, expiresAt: true, absoluteExpiresAt: true },
  });
  return { secret, session };
}

/** The session and its user as read (or as cached, token-cache.ts), before this request's checks. */
type Verified = Omit<SessionEntry, 'cachedAt'>;

async function readSession(id: string): Promise<(Verified & { disabled: boolean }) | null> {
  // The session and its user in one statement (a relation include would be two).
  const [row] = await db().$queryRaw<SessionRow[]>`
    SELECT s.user_id AS "userId", s.created_at AS "createdAt", s.last_seen_at AS "lastSeenAt", s.expires_at AS "expiresAt",
           s.absolute_expires_at AS "absoluteExpiresAt", u.username, u.roles::text[] AS roles, u.disabled,
           u.must_change_password AS "mustChangePassword"
    FROM sessions s JOIN users u ON u.id = s.user_id
    WHERE s.id = ${id}`;
  if (!row) return null;
  return {
    userId: row.userId,
    createdAt: row.createdAt,
    lastSeenAt: row.lastSeenAt,
    expiresAt: row.expiresAt,
    absoluteExpiresAt: row.absoluteExpiresAt,
    disabled: row.disabled,
    actor: { name: row.username, userId: row.userId, roles: (row.roles ?? []) as Role[], via: 'session', credentialId: id, mustChangePassword: row.mustChangePassword },
  };
}

/**
 * The session and its user for a cookie secret, or null when it is malformed, unknown, expired, or its user is
 * disabled. Every request of a signed-in user starts here, so a session verified moments ago is taken from this
 * process's credential cache (token-cache.ts): a sign-out, a disabled user or a role change anywhere drops it, here at
 * once and on the other instances by notification, so a change to a user or a session applies to live sessions at once.
 */
export async function validateSession(secret: string | null | undefined, now = new Date(), policy = sessionPolicy()): Promise<ValidSession | null> {
  if (!secret || !SECRET_PATTERN.test(secret)) return null;
  const id = sha256Hex(secret);
  const cached = cachedSession(id, now);
  const generation = cacheGeneration();
  const found: (Verified & { disabled?: boolean }) | null = cached ?? (await readSession(id));
  if (!found) return null;
  if (found.expiresAt <= now || found.absoluteExpiresAt <= now) {
    forgetSession(id);
    await db().session.deleteMany({ where: { id } });
    return null;
  }
  // Only enabled users' sessions are cached: disabling a user drops the cache.
  if (found.disabled) return null;
  let { lastSeenAt, expiresAt } = found;
  if (now.getTime() - lastSeenAt.getTime() >= TOUCH_INTERVAL_MS) {
    lastSeenAt = now;
    expiresAt = new Date(Math.min(now.getTime() + policy.ttlMs, found.absoluteExpiresAt.getTime()));
    // updateMany: a sign-out racing this request must not turn into a "record not found" error here; and when the
    // row is gone (signed out elsewhere, its notification still on the way), the session is not valid any more.
    const { count } = await db().session.updateMany({ where: { id }, data: { lastSeenAt, expiresAt } });
    if (count === 0) {
      forgetSession(id);
      return null;
    }
    if (cached) Object.assign(cached, { lastSeenAt, expiresAt });
  }
  const verified: Verified = { actor: found.actor, userId: found.userId, createdAt: found.createdAt, lastSeenAt, expiresAt, absoluteExpiresAt: found.absoluteExpiresAt };
  if (!cached) rememberSession(id, verified, now, generation);
  return {
    session: { id, userId: verified.userId, createdAt: verified.createdAt, lastSeenAt, expiresAt, absoluteExpiresAt: verified.absoluteExpiresAt },
    actor: { ...verified.actor },
  };
}

/** Replaces a session with a fresh one (after a password change): the old secret stops working at once. */
export async function rotateSession(oldSecret: string, client: ClientInfo = {}, now = new Date(), policy = sessionPolicy()): Promise<{ secret: string; session: SessionInfo } | null> {
  const current = await validateSession(oldSecret, now, policy);
  if (!current) return null;
  const next = await createSession(current.actor.userId, client, now, policy);
  await db().session.deleteMany({ where: { id: current.session.id } });
  forgetVerifiedCredentials();
  return next;
}

export async function revokeSession(secret: string | null | undefined): Promise<boolean> {
  if (!secret || !SECRET_PATTERN.test(secret)) return false;
  const { count } = await db().session.deleteMany({ where: { id: sha256Hex(secret) } });
  forgetVerifiedCredentials();
  return count > 0;
}

/** Signs a user out everywhere (disabled, password reset), optionally keeping the session doing the change. */
export async function revokeUserSessions(userId: string, exceptSessionId?: string): Promise<number> {
  const { count } = await db().session.deleteMany({ where: { userId, ...(exceptSessionId ? { id: { not: exceptSessionId } } : {}) } });
  forgetVerifiedCredentials();
  return count;
}

/** Housekeeping: expired rows are refused anyway; this only keeps the table small. */
export async function pruneExpiredSessions(now = new Date()): Promise<number> {
  const { count } = await db().session.deleteMany({ where: { OR: [{ expiresAt: { lte: now } }, { absoluteExpiresAt: { lte: now } }] } });
  return count;
}

export async function listUserSessions(userId: string) {
  return db().session.findMany({ where: { userId }, orderBy: { lastSeenAt: 'desc' }, select: { createdAt: true, lastSeenAt: true, expiresAt: true, ip: true, userAgent: true } });
}
