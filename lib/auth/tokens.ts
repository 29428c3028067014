import { db, type Tx } from '@/lib/db/client';
import { NotFoundError } from '@/lib/shared/errors';
import { parseInput } from '@/lib/shared/validation';
import { recordAuthEvent } from './events';
import { cachedToken, cacheGeneration, forgetVerifiedCredentials, rememberToken } from './token-cache';
import { requirePermission } from './errors';
import { can, type Role } from './permissions';
import { createTokenSchema, tokenIdSchema } from './schemas';
import { randomSecret, sha256Hex } from './secrets';
import type { ApiTokenView, AuthActor } from './types';

/**
 * API tokens: `bc_` + 256 random bits (base64url). The prefix makes a leaked token recognisable to secret
 * scanners and people; only its sha256 is stored, so the full token is shown once, at creation. A token acts
 * with its owner's current roles and stops working when revoked, expired, or when its owner is disabled.
 */
export const TOKEN_PREFIX = 'bc_';
const TOKEN_PATTERN = /^bc_[A-Za-z0-9_-]{32,200}$/;
const DISPLAY_PREFIX_LENGTH = 11; // "bc_" + 8: enough to tell tokens apart, far too little to guess the rest
const TOUCH_INTERVAL_MS = 60_000;

export function generateApiToken(): string {
  return `${TOKEN_PREFIX}${randomSecret()}`;
}

export function looksLikeApiToken(value: string): boolean {
  return TOKEN_PATTERN.test(value);
}

export function displayPrefix(token: string): string {
  return token.slice(0, DISPLAY_PREFIX_LENGTH);
}

type TokenRow = {
  id: string; userId: string; name: string; prefix: string; createdAt: Date; createdBy: string;
  lastUsedAt: Date | null; expiresAt: Date | null; revokedAt: Date | null; revokedBy: string | null; user: { username: string };
};

function view(row: TokenRow): ApiTokenView {
  return {
    id: row.id,
    userId: row.userId,
    username: row.user.username,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.createdAt.toISOString(),
    createdBy: row.createdBy,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
    revokedBy: row.revokedBy,
  };
}

/** Stores a token for a user. Used by `createApiToken` and by the start-up bootstrap (which brings its own value). */
export async function storeApiToken(
  input: { userId: string; name: string; token: string; createdBy: string; expiresAt?: Date | null },
  client: Tx | ReturnType<typeof db> = db(),
): Promise<ApiTokenView> {
  const row = await client.apiToken.create({
    data: { userId: input.userId, name: input.name, prefix: displayPrefix(input.token), tokenHash: sha256Hex(input.token), createdBy: input.createdBy, expiresAt: input.expiresAt ?? null },
    include: { user: { select: { username: true } } },
  });
  return view(row);
}

/** Creates a token for the acting user. The returned `token` is the only time anyone sees it. */
export async function createApiToken(input: unknown, actor: AuthActor, now = new Date()): Promise<{ token: string; record: ApiTokenView }> {
  requirePermission(actor, 'tokens.own');
  const { name, expiresInDays } = parseInput(createTokenSchema, input);
  const token = generateApiToken();
  const expiresAt = expiresInDays ? new Date(now.getTime() + expiresInDays * 86_400_000) : null;
  const record = await storeApiToken({ userId: actor.userId, name, token, createdBy: actor.name, expiresAt });
  await recordAuthEvent({ action: 'token.created', actor: actor.name, subject: actor.name, details: { tokenId: record.id, prefix: record.prefix, name, expiresAt: record.expiresAt } });
  return { token, record };
}

/** Notes a token's use at most once a minute (the tokens page shows it); a failure to note it refuses nothing. */
function touch(tokenId: string, lastUsedAt: number | null, now: Date): void {
  if (lastUsedAt !== null && now.getTime() - lastUsedAt < TOUCH_INTERVAL_MS) return;
  void db()
    .apiToken.updateMany({ where: { id: tokenId }, data: { lastUsedAt: now } })
    .catch(() => undefined);
}

/**
 * The token's owner as an actor, or null for anything that is not a live token of an enabled user. Verified
 * tokens are cached for a short while (token-cache.ts: dropped on every instance at any revoke, disable or role
 * change), so a busy API client does not pay a lookup per request.
 */
export async function verifyApiToken(token: string, now = new Date()): Promise<AuthActor | null> {
  if (!looksLikeApiToken(token)) return null;
  const hash = sha256Hex(token);
  const cached = cachedToken(hash, now);
  if (cached) {
    touch(cached.tokenId, cached.lastUsedAt, now);
    if (cached.lastUsedAt === null || now.getTime() - cached.lastUsedAt >= TOUCH_INTERVAL_MS) cached.lastUsedAt = now.getTime();
    return cached.actor;
  }
  const generation = cacheGeneration();
  const row = await db().apiToken.findUnique({
    where: { tokenHash: sha256Hex(token) },
    include: { user: { select: { id: true, username: true, roles: true, disabled: true, mustChangePassword: true } } },
  });
  if (!row || row.revokedAt || (row.expiresAt && row.expiresAt <= now) || row.user.disabled) return null;
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() >= TOUCH_INTERVAL_MS) {
    await db().apiToken.updateMany({ where: { id: row.id }, data: { lastUsedAt: now } });
  }
  const actor: AuthActor = {
    name: row.user.username,
    userId: row.user.id,
    roles: row.user.roles as Role[],
    via: 'token',
    credentialId: row.id,
    mustChangePassword: row.user.mustChangePassword,
  };
  rememberToken(hash, { actor, tokenId: row.id, expiresAt: row.expiresAt?.getTime() ?? null, lastUsedAt: now.getTime() }, now, generation);
  return actor;
}

/** Revokes a token: its owner may, and so may an admin (`tokens.manage`). Revoking twice is fine. */
export async function revokeApiToken(tokenId: unknown, actor: AuthActor, now = new Date()): Promise<ApiTokenView> {
  requirePermission(actor, 'tokens.own');
  const id = parseInput(tokenIdSchema, tokenId, 'tokenId');
  const row = await db().apiToken.findUnique({ where: { id }, include: { user: { select: { username: true } } } });
  // Someone else's token looks exactly like a missing one to a non-admin: ids are not a way to probe.
  if (!row || (row.userId !== actor.userId && !can(actor, 'tokens.manage'))) throw new NotFoundError(`API token ${id}`);
  if (row.revokedAt) return view(row);
  const updated = await db().apiToken.update({
    where: { id },
    data: { revokedAt: now, revokedBy: actor.name },
    include: { user: { select: { username: true } } },
  });
  // This instance stops accepting it before answering; the others drop theirs on the trigger's notification.
  forgetVerifiedCredentials();
  await recordAuthEvent({ action: 'token.revoked', actor: actor.name, subject: row.user.username, details: { tokenId: id, prefix: row.prefix, name: row.name } });
  return view(updated);
}

/** The actor's own tokens; with `all`, everyone's (admins only). Newest first. */
export async function listApiTokens(actor: AuthActor, options: { all?: boolean } = {}): Promise<ApiTokenView[]> {
  requirePermission(actor, 'tokens.own');
  if (options.all) requirePermission(actor, 'tokens.manage');
  const rows = await db().apiToken.findMany({
    where: options.all ? {} : { userId: actor.userId },
    orderBy: { createdAt: 'desc' },
    include: { user: { select: { username: true } } },
    take: 1000,
  });
  return rows.map(view);
}
