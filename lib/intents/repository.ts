import { Prisma } from '@/generated/prisma/client';
import type { PoolQuery, Tx } from '@/lib/db/client';
import { queryOnReadPool } from '@/lib/db/read';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { JsonObject } from '@/lib/shared/json';
import type { KeyRef } from './statements';
import type { AuditEvent, ConflictEvent, Correction, Intent, IntentWithCorrections } from '@/lib/shared/intent-types';

/**
 * Raw SQL for reads and for the writes that are not commands (creating an intent, recording a deadlock). The
 * commands themselves are database functions (lib/intents/statements.ts). Always Prisma's tagged templates:
 * parameters are bound, never spliced.
 */
export const INTENT_COLUMNS = Prisma.raw(
  `id::text AS id, status::text AS status, payload, source, version, is_replay AS "isReplay", created_at AS "createdAt", updated_at AS "updatedAt"`,
);

export type IntentRow = Omit<Intent, 'createdAt' | 'updatedAt'> & { createdAt: Date; updatedAt: Date };

export function toIntent(row: IntentRow): Intent {
  return { ...row, createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString() };
}

/**
 * Labels the backend for the Locks page (which intent it is about) and sets this transaction's lock timeout. This,
 * selectIntentForUpdate and updateStatusWithAudit run inside transactionOnPool: they serve the replay's
 * transactions, which may deadlock by design and whose deadlock records need Postgres' own DETAIL.
 */
export async function labelTransaction(query: PoolQuery, label: string, lockTimeoutMs: number): Promise<void> {
  await query(Prisma.sql`SELECT set_config('application_name', ${label.slice(0, 63)}, true), set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, true)`);
}

/** The replay's pipeline stand-in locks its intent this way (lib/replay/transactions.ts). */
export async function selectIntentForUpdate(query: PoolQuery, id: string, nowait: boolean): Promise<IntentRow | undefined> {
  const rows = nowait
    ? await query<IntentRow>(Prisma.sql`SELECT ${INTENT_COLUMNS} FROM intents WHERE id = ${id}::uuid FOR UPDATE NOWAIT`)
    : await query<IntentRow>(Prisma.sql`SELECT ${INTENT_COLUMNS} FROM intents WHERE id = ${id}::uuid FOR UPDATE`);
  return rows[0];
}

export async function selectIntent(tx: Tx, id: string): Promise<IntentRow | undefined> {
  const rows = await tx.$queryRaw<IntentRow[]>`SELECT ${INTENT_COLUMNS} FROM intents WHERE id = ${id}::uuid`;
  return rows[0];
}

/**
 * Moves the intent to `to` if it is still at `fromVersion`, writing its audit event in the same statement: a step
 * of the replay's own transactions (lib/replay/transactions.ts).
 */
export async function updateStatusWithAudit(
  query: PoolQuery,
  args: { id: string; fromVersion: number; from: IntentStatus; to: IntentStatus; actor: string; action: string; details?: JsonObject },
): Promise<IntentRow | undefined> {
  const rows = await query<IntentRow>(Prisma.sql`
    WITH updated AS (
      UPDATE intents SET status = ${args.to}::"IntentStatus", version = version + 1, updated_at = now()
      WHERE id = ${args.id}::uuid AND version = ${args.fromVersion}
      RETURNING *
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, from_status, to_status, version_before, version_after, details)
      SELECT id, ${args.action}, ${args.actor}, ${args.from}::"IntentStatus", status, version - 1, version, ${JSON.stringify(args.details ?? null)}::jsonb
      FROM updated
    )
    SELECT ${INTENT_COLUMNS} FROM updated`);
  return rows[0];
}

/**
 * Creates an intent with its audit event. With `key` (a keyed create, lib/intents/idempotency.ts) the same statement
 * stores the outcome in the key's record, so a repeat finds the intent this call made and nothing else.
 */
export async function insertIntentWithAudit(
  tx: Tx,
  args: { payload: JsonObject; source: string; actor: string; isReplay: boolean; status?: IntentStatus; key?: KeyRef | null },
): Promise<IntentRow> {
  const rows = await tx.$queryRaw<IntentRow[]>`
    WITH created AS (
      INSERT INTO intents (id, status, payload, source, is_replay)
      VALUES (gen_random_uuid(), ${args.status ?? 'RECEIVED'}::"IntentStatus", ${JSON.stringify(args.payload)}::jsonb, ${args.source}, ${args.isReplay})
      RETURNING *
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, to_status, version_after, details)
      SELECT id, 'created', ${args.actor}, status, version, jsonb_build_object('source', source) FROM created
    )
    SELECT ${INTENT_COLUMNS} FROM created
    LEFT JOIN LATERAL (
      SELECT "bridge_complete_key"(${args.key?.scope ?? null}::text, ${args.key?.key ?? null}::text,
                                   jsonb_build_object('outcome', 'applied', 'intent', to_jsonb(created), 'priorStatus', NULL))
      WHERE ${args.key?.key ?? null}::text IS NOT NULL
    ) keyed ON true`;
  return rows[0];
}

type IntentWithCorrectionsRow = IntentRow & { corrections: (Omit<Correction, 'createdAt'> & { createdAt: string })[] };

/**
 * An intent and its corrections in one statement, so one snapshot (the version always matches the corrections
 * listed) without a transaction around two reads. It runs on the pool like the engine's commands: a read of one
 * intent is as common as a command and should cost no more. A console read: on a replica where the read scope allows.
 */
export async function selectIntentWithCorrections(id: string): Promise<IntentWithCorrections | undefined> {
  const rows = await queryOnReadPool<IntentWithCorrectionsRow>(Prisma.sql`
    SELECT ${INTENT_COLUMNS},
           COALESCE((
             SELECT json_agg(json_build_object(
                      'id', c.id::text, 'intentId', c.intent_id::text, 'correctionId', c.correction_id, 'diff', c.diff,
                      'source', c.source, 'reason', c.reason, 'metadata', c.metadata, 'actor', c.actor,
                      'versionBefore', c.version_before, 'versionAfter', c.version_after,
                      'statusBefore', c.status_before::text, 'statusAfter', c.status_after::text, 'createdAt', c.created_at)
                    ORDER BY c.id)
             FROM corrections c WHERE c.intent_id = intents.id), '[]'::json) AS corrections
    FROM intents WHERE id = ${id}::uuid`);
  const row = rows[0];
  if (!row) return undefined;
  const { corrections, ...intent } = row;
  // Postgres writes a timestamp in JSON with microseconds and an offset; the API answers JavaScript's own form, as
  // for every other timestamp (pg's Date parsing keeps milliseconds, as `new Date` does here).
  return { ...toIntent(intent), corrections: corrections.map((c) => ({ ...c, createdAt: new Date(c.createdAt).toISOString() })) };
}

type AuditRow = Omit<AuditEvent, 'id' | 'at'> & { id: bigint; at: Date };
export async function selectAuditEvents(tx: Tx, intentId: string): Promise<AuditEvent[]> {
  const rows = await tx.$queryRaw<AuditRow[]>`
    SELECT id, intent_id::text AS "intentId", action, actor, from_status::text AS "fromStatus", to_status::text AS "toStatus",
           version_before AS "versionBefore", version_after AS "versionAfter", details, at
    FROM audit_events WHERE intent_id = ${intentId}::uuid ORDER BY id`;
  return rows.map((r) => ({ ...r, id: String(r.id), at: r.at.toISOString() }));
}

type ConflictRow = Omit<ConflictEvent, 'id' | 'at'> & { id: bigint; at: Date };
export async function selectConflictEvents(tx: Tx, intentId: string): Promise<ConflictEvent[]> {
  const rows = await tx.$queryRaw<ConflictRow[]>`
    SELECT id, intent_id::text AS "intentId", operation, expected_version AS "expectedVersion",
           current_version AS "currentVersion", reason, actor, at
    FROM conflict_events WHERE intent_id = ${intentId}::uuid ORDER BY id`;
  return rows.map((r) => ({ ...r, id: String(r.id), at: r.at.toISOString() }));
}

export async function insertDeadlockEvent(
  tx: Tx,
  args: { operation: string; intentIds: string[]; detail: string; attempt: number; retried: boolean; isReplay: boolean },
): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO deadlock_events (operation, intent_ids, detail, attempt, retried, is_replay)
    VALUES (${args.operation}, ${args.intentIds}::uuid[], ${args.detail}, ${args.attempt}, ${args.retried}, ${args.isReplay})`;
}

/** Backends labelled as working on these intents, other than ourselves: who holds the lock, when known. */
export async function selectLabelledBackends(tx: Tx, intentIds: string[]) {
  return tx.$queryRaw<{ pid: number; applicationName: string; state: string | null; transactionStartedAt: Date | null; query: string | null }[]>`
    SELECT pid, application_name AS "applicationName", state, xact_start AS "transactionStartedAt", left(query, 200) AS query
    FROM pg_stat_activity
    WHERE pid <> pg_backend_pid() AND application_name LIKE 'bridge:%'
      AND split_part(application_name, ':', 3) = ANY(${intentIds}::text[])
    LIMIT 5`;
}
