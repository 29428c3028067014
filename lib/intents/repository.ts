import { Prisma } from '@/generated/prisma/client';
import type { Tx } from '@/lib/db/client';
import { fenceCondition } from '@/lib/leases/fencing';
import type { Fencing } from '@/lib/leases/schemas';
import type { IntentStatus } from './state-machine';
import type { JsonObject } from './json';
import type { AuditEvent, ConflictEvent, Correction, Intent } from './types';

/**
 * Raw SQL for what the ORM cannot say (FOR UPDATE [NOWAIT], set_config, conditional updates with their audit in
 * one round trip). Always Prisma's tagged templates: parameters are bound, never spliced.
 */
export const INTENT_COLUMNS = Prisma.raw(
  `id::text AS id, status::text AS status, payload, source, version, is_replay AS "isReplay", created_at AS "createdAt", updated_at AS "updatedAt"`,
);

export type IntentRow = Omit<Intent, 'createdAt' | 'updatedAt'> & { createdAt: Date; updatedAt: Date };

export function toIntent(row: IntentRow): Intent {
  return { ...row, createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString() };
}

/** Labels the backend for the Locks page (which intent it is about) and sets this transaction's lock timeout. */
export async function labelTransaction(tx: Tx, label: string, lockTimeoutMs: number): Promise<void> {
  await tx.$queryRaw`SELECT set_config('application_name', ${label.slice(0, 63)}, true), set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, true)`;
}

export async function selectIntentForUpdate(tx: Tx, id: string, nowait: boolean): Promise<IntentRow | undefined> {
  const rows = nowait
    ? await tx.$queryRaw<IntentRow[]>`SELECT ${INTENT_COLUMNS} FROM intents WHERE id = ${id}::uuid FOR UPDATE NOWAIT`
    : await tx.$queryRaw<IntentRow[]>`SELECT ${INTENT_COLUMNS} FROM intents WHERE id = ${id}::uuid FOR UPDATE`;
  return rows[0];
}

export async function selectIntent(tx: Tx, id: string): Promise<IntentRow | undefined> {
  const rows = await tx.$queryRaw<IntentRow[]>`SELECT ${INTENT_COLUMNS} FROM intents WHERE id = ${id}::uuid`;
  return rows[0];
}

/** Locks in id order, so two bulk updates over overlapping sets can never deadlock each other. */
export async function selectIntentsForUpdateSorted(tx: Tx, ids: string[]): Promise<IntentRow[]> {
  return tx.$queryRaw<IntentRow[]>`SELECT ${INTENT_COLUMNS} FROM intents WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR UPDATE`;
}

/**
 * Moves the intent to `to` if it is still at `fromVersion`, writing its audit event in the same statement.
 * No row back means the version moved on (optimistic) — under a row lock it cannot happen.
 */
export async function updateStatusWithAudit(
  tx: Tx,
  args: { id: string; fromVersion: number; from: IntentStatus; to: IntentStatus; actor: string; action: string; details?: JsonObject; fencing?: Fencing | null },
): Promise<IntentRow | undefined> {
  const rows = await tx.$queryRaw<IntentRow[]>`
    WITH updated AS (
      UPDATE intents SET status = ${args.to}::"IntentStatus", version = version + 1, updated_at = now()
      WHERE id = ${args.id}::uuid AND version = ${args.fromVersion} ${fenceCondition(args.fencing)}
      RETURNING *
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, from_status, to_status, version_before, version_after, details)
      SELECT id, ${args.action}, ${args.actor}, ${args.from}::"IntentStatus", status, version - 1, version, ${JSON.stringify(args.details ?? null)}::jsonb
      FROM updated
    )
    SELECT ${INTENT_COLUMNS} FROM updated`;
  return rows[0];
}

export type LockAndUpdateArgs = {
  id: string;
  to: IntentStatus;
  /** The statuses the state machine lets move to `to` (computed by the caller from TRANSITIONS: one source of truth). */
  allowedFrom: readonly IntentStatus[];
  /** null: no expectation. */
  expectedVersion: number | null;
  /** The backend's label for the Locks page, and this statement's lock timeout. */
  label: string;
  lockTimeoutMs: number;
  actor: string;
  action: string;
  /** A lease-protected write: the fence is checked in the UPDATE, raising SQLSTATE BF409 when the token is stale. */
  fencing?: Fencing | null;
};

/**
 * A pessimistic status update in one statement — one round trip, one (implicit) transaction — doing what the
 * interactive transaction does step by step: label the backend and set the lock timeout (in the WHERE clause, so
 * they are in force before the row lock is requested), SELECT … FOR UPDATE, then update and audit only if the state
 * machine allows the move from the locked status and the expected version (if any) is the locked one. The row as
 * locked always comes back; the updated row only when it was updated. Exposed as SQL so the benchmark's raw-pg
 * baseline runs exactly this statement.
 *
 * One difference from the step-by-step transaction, by construction: Postgres takes a statement's table-level locks
 * (intents, audit_events) when the statement starts, before set_config runs — so a wait for a table lock held by DDL
 * or LOCK TABLE is not bounded by this command's lock timeout (row locks are). NOWAIT calls, which must fail before
 * anything else waits, keep the step-by-step transaction.
 */
export function lockAndUpdateStatusSql(args: LockAndUpdateArgs): Prisma.Sql {
  return Prisma.sql`
    WITH locked AS MATERIALIZED (
      SELECT * FROM intents
      WHERE id = ${args.id}::uuid
        AND set_config('application_name', ${args.label.slice(0, 63)}, true) IS NOT NULL
        AND set_config('lock_timeout', ${`${args.lockTimeoutMs}ms`}, true) IS NOT NULL
      FOR UPDATE
    ), updated AS (
      UPDATE intents i SET status = ${args.to}::"IntentStatus", version = i.version + 1, updated_at = now()
      FROM locked l
      -- No version comparison with i: this statement's snapshot may predate the commit it waited for, and then the
      -- scan sees the old row version; the update re-checks the newest one (which we hold locked) on its own.
      WHERE i.id = l.id
        AND l.status = ANY(${[...args.allowedFrom]}::"IntentStatus"[])
        AND (${args.expectedVersion}::int IS NULL OR l.version = ${args.expectedVersion}::int)
        ${fenceCondition(args.fencing)}
      RETURNING i.*, l.status AS from_status
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, from_status, to_status, version_before, version_after, details)
      SELECT id, ${args.action}, ${args.actor}, from_status, status, version - 1, version, 'null'::jsonb
      FROM updated
    )
    SELECT 'locked' AS "rowKind", ${INTENT_COLUMNS},
           (extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000)::float8 AS "lockWaitMs"
    FROM locked
    UNION ALL
    SELECT 'updated', ${INTENT_COLUMNS}, NULL::float8 FROM updated`;
}

/**
 * Runs lockAndUpdateStatusSql. `lockWaitMs` is measured by the server: from the statement's start to the row being
 * locked (the projection of the locked row is computed once the lock is held).
 */
export async function lockAndUpdateStatus(client: Tx, args: LockAndUpdateArgs): Promise<{ locked?: IntentRow; updated?: IntentRow; lockWaitMs: number }> {
  const rows = await client.$queryRaw<(IntentRow & { rowKind: 'locked' | 'updated'; lockWaitMs: number | null })[]>(lockAndUpdateStatusSql(args));
  const strip = (r: (typeof rows)[number] | undefined): IntentRow | undefined => {
    if (!r) return undefined;
    const { rowKind: _kind, lockWaitMs: _wait, ...row } = r;
    return row;
  };
  const locked = rows.find((r) => r.rowKind === 'locked');
  return { locked: strip(locked), updated: strip(rows.find((r) => r.rowKind === 'updated')), lockWaitMs: locked?.lockWaitMs ?? 0 };
}

/** What a correction writes, whichever path applies it. */
export type CorrectionWrite = {
  id: string;
  correctionId: string;
  diff: JsonObject;
  source: string;
  reason: string;
  metadata: JsonObject | null;
  actor: string;
};

/**
 * Applies a correction if the intent is still at `fromVersion`: payload (the diff deep-merged by the database's
 * bridge_jsonb_deep_merge, the same rule as the locked path), status, version, correction row and audit together.
 */
export async function applyCorrection(
  tx: Tx,
  args: CorrectionWrite & { fromVersion: number; from: IntentStatus; to: IntentStatus; fencing?: Fencing | null },
): Promise<(IntentRow & { correctionCount: number }) | undefined> {
  const rows = await tx.$queryRaw<(IntentRow & { correctionCount: bigint })[]>`
    WITH updated AS (
      UPDATE intents SET payload = bridge_jsonb_deep_merge(payload, ${JSON.stringify(args.diff)}::jsonb), status = ${args.to}::"IntentStatus",
             version = version + 1, updated_at = now()
      WHERE id = ${args.id}::uuid AND version = ${args.fromVersion} ${fenceCondition(args.fencing)}
      RETURNING *
    ), correction AS (
      INSERT INTO corrections (intent_id, correction_id, diff, source, reason, metadata, actor,
                               version_before, version_after, status_before, status_after)
      SELECT id, ${args.correctionId}, ${JSON.stringify(args.diff)}::jsonb, ${args.source}, ${args.reason},
             ${args.metadata === null ? null : JSON.stringify(args.metadata)}::jsonb, ${args.actor},
             version - 1, version, ${args.from}::"IntentStatus", status
      FROM updated
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, from_status, to_status, version_before, version_after, details)
      SELECT id, 'correction', ${args.actor}, ${args.from}::"IntentStatus", status, version - 1, version,
             jsonb_build_object('correctionId', ${args.correctionId}::text, 'reason', ${args.reason}::text, 'source', ${args.source}::text)
      FROM updated
    )
    SELECT ${INTENT_COLUMNS}, (SELECT count(*) FROM corrections c WHERE c.intent_id = updated.id) + 1 AS "correctionCount"
    FROM updated`;
  const row = rows[0];
  return row && { ...row, correctionCount: Number(row.correctionCount) };
}

export type CorrectLockedArgs = CorrectionWrite & {
  /** The backend's label for the Locks page, and this call's lock timeout. */
  label: string;
  lockTimeoutMs: number;
  /** null: no expectation. */
  expectedVersion: number | null;
  /** The state machine's answer for corrections (statusAfterCorrection), as pairs: from[i] becomes to[i]. */
  from: readonly IntentStatus[];
  to: readonly IntentStatus[];
};

export type CorrectLockedOutcome = 'applied' | 'already_applied' | 'stale' | 'refused' | 'not_found';

/**
 * A locked correction in one call of the database function bridge_correct_locked (migration
 * 20261123121000_correction_in_one_call): the row lock is held only inside Postgres, never across client round
 * trips. `row` is the intent as it is after the call (updated when applied, as locked otherwise); `lockWaitMs` is
 * measured by the server, from the lock request to the row being locked.
 */
export async function correctLocked(
  client: Tx,
  args: CorrectLockedArgs,
): Promise<{ outcome: CorrectLockedOutcome; row?: IntentRow; correctionCount: number; lockWaitMs: number }> {
  type Row = IntentRow & { outcome: CorrectLockedOutcome; correctionCount: bigint | null; lockWaitMs: number | null };
  const rows = await client.$queryRaw<Row[]>`
    SELECT outcome, r_id::text AS id, r_status AS status, r_payload AS payload, r_source AS source, r_version AS version,
           r_is_replay AS "isReplay", r_created_at AS "createdAt", r_updated_at AS "updatedAt",
           r_correction_count AS "correctionCount", r_lock_wait_ms AS "lockWaitMs"
    FROM bridge_correct_locked(
      ${args.id}::uuid, ${args.label}, ${`${args.lockTimeoutMs}ms`},
      ${args.correctionId}, ${JSON.stringify(args.diff)}::jsonb, ${args.source}, ${args.reason},
      ${args.metadata === null ? null : JSON.stringify(args.metadata)}::jsonb, ${args.actor},
      ${args.expectedVersion}::int, ${[...args.from]}::text[], ${[...args.to]}::text[])`;
  const { outcome, correctionCount, lockWaitMs, ...row } = rows[0];
  return {
    outcome,
    row: outcome === 'not_found' ? undefined : (row as IntentRow),
    correctionCount: Number(correctionCount ?? 0),
    lockWaitMs: lockWaitMs ?? 0,
  };
}

export async function countCorrections(tx: Tx, intentId: string): Promise<number> {
  const rows = await tx.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM corrections WHERE intent_id = ${intentId}::uuid`;
  return Number(rows[0]?.n ?? 0);
}

export async function correctionExists(tx: Tx, intentId: string, correctionId: string): Promise<boolean> {
  const rows = await tx.$queryRaw<unknown[]>`SELECT 1 FROM corrections WHERE intent_id = ${intentId}::uuid AND correction_id = ${correctionId}`;
  return rows.length > 0;
}

export async function insertConflictEvent(
  tx: Tx,
  args: { intentId: string; operation: string; expectedVersion: number; currentVersion: number; reason: string; actor: string },
): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO conflict_events (intent_id, operation, expected_version, current_version, reason, actor)
    VALUES (${args.intentId}::uuid, ${args.operation}, ${args.expectedVersion}, ${args.currentVersion}, ${args.reason}, ${args.actor})`;
}

export async function insertIntentWithAudit(
  tx: Tx,
  args: { payload: JsonObject; source: string; actor: string; isReplay: boolean; status?: IntentStatus },
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
    SELECT ${INTENT_COLUMNS} FROM created`;
  return rows[0];
}

type CorrectionRow = Omit<Correction, 'createdAt' | 'id'> & { id: bigint; createdAt: Date };
export async function selectCorrections(tx: Tx, intentId: string): Promise<Correction[]> {
  const rows = await tx.$queryRaw<CorrectionRow[]>`
    SELECT id, intent_id::text AS "intentId", correction_id AS "correctionId", diff, source, reason, metadata, actor,
           version_before AS "versionBefore", version_after AS "versionAfter",
           status_before::text AS "statusBefore", status_after::text AS "statusAfter", created_at AS "createdAt"
    FROM corrections WHERE intent_id = ${intentId}::uuid ORDER BY id`;
  return rows.map((r) => ({ ...r, id: String(r.id), createdAt: r.createdAt.toISOString() }));
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

/** Whether the change that produced `version` was a status change to `to` (an identical request that won the race). */
export async function lastChangeWasTransitionTo(tx: Tx, intentId: string, version: number, to: IntentStatus): Promise<boolean> {
  const rows = await tx.$queryRaw<unknown[]>`
    SELECT 1 FROM audit_events
    WHERE intent_id = ${intentId}::uuid AND version_after = ${version} AND to_status = ${to}::"IntentStatus"
      AND from_status IS DISTINCT FROM to_status AND action IN ('status_change', 'bulk_status_change')`;
  return rows.length > 0;
}
