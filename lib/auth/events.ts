import { db, type Tx } from '@/lib/db/client';
import type { Prisma } from '@/generated/prisma/client';

/**
 * The security record (append-only table auth_events): who signed in or out, who changed which user or token.
 * Details never hold a password, a session secret or a token — only ids, names and prefixes.
 */
export type AuthEventAction =
  | 'auth.sign_in'
  | 'auth.sign_in_failed'
  | 'auth.sign_out'
  | 'auth.password_changed'
  | 'user.created'
  | 'user.roles_changed'
  | 'user.disabled'
  | 'user.enabled'
  | 'user.password_reset'
  | 'user.sign_in_unlocked'
  | 'token.created'
  | 'token.revoked'
  | 'bootstrap.admin_created'
  | 'bootstrap.token_provisioned';

export async function recordAuthEvent(
  event: { action: AuthEventAction; actor: string; subject?: string | null; ip?: string | null; details?: Prisma.InputJsonValue },
  client: Tx | ReturnType<typeof db> = db(),
): Promise<void> {
  await client.authEvent.create({
    data: { action: event.action, actor: event.actor.slice(0, 255), subject: event.subject?.slice(0, 64) ?? null, ip: event.ip?.slice(0, 64) ?? null, details: event.details },
  });
}

export async function recentAuthEvents(limit = 50) {
  const rows = await db().authEvent.findMany({ orderBy: { id: 'desc' }, take: limit });
  return rows.map((r) => ({ id: r.id.toString(), action: r.action, actor: r.actor, subject: r.subject, ip: r.ip, details: r.details, at: r.at.toISOString() }));
}
