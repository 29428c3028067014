import type { Tx } from '@/lib/db/client';
import type { EventData } from './payloads';
import type { Subject } from './subjects';

/**
 * Writes an event into the outbox, in the caller's transaction: it is published if and only if that transaction
 * commits. For writers the triggers do not cover (the lease manager's evt.lock.*, the pipeline's
 * evt.intent.pipeline_finished); intent changes, corrections and conflicts are written by triggers on their tables.
 *
 * `orderingKey` is whose events must stay in order (the intent id, the lock's resource id). SQL writers call the same
 * function: `SELECT bridge_outbox_emit('evt.lock.acquired', resource_id, owner, jsonb_build_object(…), NULL, token)`.
 * After the commit, `SELECT pg_notify('bridge_outbox', '')` (or announceCommitted()) wakes the relays at once;
 * without it they find the row within their polling interval.
 */
export async function emitEvent<S extends Subject>(
  tx: Tx,
  event: { subject: S; orderingKey: string; actor: string; data: EventData<S>; intentId?: string | null; version?: number | null },
): Promise<bigint> {
  const rows = await tx.$queryRaw<{ id: bigint }[]>`
    SELECT bridge_outbox_emit(${event.subject}, ${event.orderingKey}, ${event.actor}, ${JSON.stringify(event.data)}::jsonb,
                              ${event.intentId ?? null}::uuid, ${event.version ?? null}::int) AS id`;
  return rows[0].id;
}
