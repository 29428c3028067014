import { db, type Db, type Tx } from '@/lib/db/client';
import type { AuditAction } from './actions';

/**
 * Appends one entry to the audit log (audit_events) for an action that is not an intent command: the engine and
 * its database functions write their own rows with the change they audit. Naming only the columns every audit row
 * has keeps the callers independent of how the table is stored. Pass the caller's transaction so the entry commits
 * or rolls back with the change it records.
 */
export async function recordAuditEvent(
  event: { action: AuditAction; actor: string; intentId?: string | null; details?: Record<string, unknown> },
  client: Tx | Db = db(),
): Promise<void> {
  await client.$executeRaw`
    INSERT INTO audit_events (intent_id, action, actor, details)
    VALUES (${event.intentId ?? null}::uuid, ${event.action}, ${event.actor.slice(0, 255)}, ${JSON.stringify(event.details ?? {})}::jsonb)`;
}
