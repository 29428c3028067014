import { Prisma } from '@/generated/prisma/client';
import { queryOnPool } from '@/lib/db/client';
import type { Fencing } from '@/lib/leases/schemas';
import type { JsonObject } from '@/lib/shared/json';
import type { IntentRow } from './repository';
import type { IntentStatus } from '@/lib/shared/intent-states';

/**
 * The engine's commands, one database call each (prisma/functions/*.sql): the call decides and writes, and answers
 * with an explicit outcome column and the row. What is left to TypeScript is choosing the call's lock mode, the
 * attempt loop, and turning an outcome into a result or a typed error (lib/intents/commands.ts). Parameters are
 * always bound (Prisma's tagged templates), never spliced.
 */

/**
 * How a call reads the row: FOR UPDATE when it is free ('try', SQLSTATE BR001 when it is held), FOR UPDATE waiting
 * for it with a waiter place ('wait', BR002 when none is free), FOR UPDATE NOWAIT, unlocked and version-checked
 * ('none'), or 'adaptive' (docs/LOCKING.md).
 */
export type LockMode = 'try' | 'wait' | 'nowait' | 'none' | 'adaptive';

export type StatusOutcome = 'applied' | 'already_applied' | 'stale' | 'invalid_transition' | 'fencing_token_stale' | 'not_found' | 'raced';
export type CorrectionOutcome = 'applied' | 'already_applied' | 'stale' | 'refused' | 'fencing_token_stale' | 'not_found' | 'raced';
export type BulkOutcome = 'applied' | 'already_applied' | 'invalid_transition' | 'not_found';

/** Whose idempotency record the call completes (same statement, same transaction). */
export type KeyRef = { scope: string; key: string };

type Outcome<O> = { outcome: O; intent: IntentRow | null; priorStatus: IntentStatus | null; tookLock: boolean; lockWaitMs: number };
export type StatusRow = Outcome<StatusOutcome>;
/** `correctionId`: the correction answered with, the one written or the one repeated (bridge_correct). */
export type CorrectionRow = Outcome<CorrectionOutcome> & { correctionCount: number; retries: number; correctionId: string | null };

/** The intent's columns out of the call's `intent` composite (all null when there is none). */
const INTENT_OF_R = Prisma.raw(
  `(r.intent).id::text AS id, (r.intent).status::text AS status, (r.intent).payload AS payload, (r.intent).source AS source,
   (r.intent).version AS version, (r.intent).is_replay AS "isReplay", (r.intent).created_at AS "createdAt", (r.intent).updated_at AS "updatedAt"`,
);

type Flat = IntentRow & { outcome: string; priorStatus: IntentStatus | null; tookLock: boolean; lockWaitMs: number | null };

function split<O>(flat: Flat): Outcome<O> {
  const { outcome, priorStatus, tookLock, lockWaitMs, ...intent } = flat;
  return { outcome: outcome as O, intent: intent.id === null ? null : intent, priorStatus, tookLock, lockWaitMs: lockWaitMs ?? 0 };
}

export type UpdateStatusArgs = {
  id: string;
  to: IntentStatus;
  /** The statuses the state machine lets move to `to` (from TRANSITIONS: the rule stays written once, in TypeScript). */
  allowedFrom: readonly IntentStatus[];
  expectedVersion: number | null;
  lock: LockMode;
  lockTimeoutMs: number;
  contendedWithinMs: number;
  actor: string;
  reason: string | null;
  key: KeyRef | null;
  /** A lease-protected write: the call checks the token against the fence (bridge_fence_accept) right before writing. */
  fencing?: Fencing | null;
};

/** The status update's statement; the benchmark's plain-pg baseline runs exactly this text. */
export function updateStatusStatement(a: UpdateStatusArgs): Prisma.Sql {
  return Prisma.sql`
    SELECT r.outcome, r.prior_status AS "priorStatus", r.took_lock AS "tookLock", r.lock_wait_ms AS "lockWaitMs", ${INTENT_OF_R}
    FROM bridge_update_status(${a.id}::uuid, ${a.to}, ${[...a.allowedFrom]}::text[], ${a.expectedVersion}::int,
      ${a.lock}, ${a.lockTimeoutMs}::int, ${a.contendedWithinMs}::int, ${a.actor}, ${a.reason}::text,
      ${a.key?.scope ?? null}::text, ${a.key?.key ?? null}::text,
      ${a.fencing?.resource ?? null}::text, ${a.fencing?.token ?? null}::bigint) r`;
}

export async function updateStatus(a: UpdateStatusArgs): Promise<StatusRow> {
  const [row] = await queryOnPool<Flat>(updateStatusStatement(a));
  return split<StatusOutcome>(row);
}

export type CorrectArgs = {
  id: string;
  correctionId: string;
  diff: JsonObject;
  source: string;
  reason: string;
  metadata: JsonObject | null;
  actor: string;
  expectedVersion: number | null;
  /** The state machine's answer for corrections (statusAfterCorrection), as pairs: from[i] becomes to[i]. */
  from: readonly IntentStatus[];
  to: readonly IntentStatus[];
  lock: Exclude<LockMode, 'nowait'>;
  lockTimeoutMs: number;
  contendedWithinMs: number;
  key: KeyRef | null;
  attempt: number;
  fencing?: Fencing | null;
};

/** A correction as an item of bridge_correct_together's list (its parameters by name; from/to are the call's). */
function correctionItem(a: CorrectArgs) {
  return {
    id: a.id,
    correctionId: a.correctionId,
    diff: a.diff,
    source: a.source,
    reason: a.reason,
    metadata: a.metadata,
    actor: a.actor,
    expectedVersion: a.expectedVersion,
    lock: a.lock,
    lockTimeoutMs: a.lockTimeoutMs,
    contendedWithinMs: a.contendedWithinMs,
    idemScope: a.key?.scope ?? null,
    idemKey: a.key?.key ?? null,
    attempt: a.attempt,
    fenceResource: a.fencing?.resource ?? null,
    fenceToken: a.fencing?.token ?? null,
  };
}

/**
 * Corrections, in one call and one transaction, each answered in the order given: bridge_correct_together runs
 * bridge_correct for each (one correction alone is a list of one). They all share `from`/`to`, the state machine's
 * answer for corrections.
 */
export async function correctTogether(list: readonly CorrectArgs[]): Promise<CorrectionRow[]> {
  const rows = await queryOnPool<Flat & { item: number; correctionCount: number; correctionId: string | null }>(Prisma.sql`
    SELECT r.item, r.outcome, r.prior_status AS "priorStatus", r.took_lock AS "tookLock", r.lock_wait_ms AS "lockWaitMs",
           r.correction_count::int AS "correctionCount", r.correction_id AS "correctionId", ${INTENT_OF_R}
    FROM bridge_correct_together(${JSON.stringify(list.map(correctionItem))}::jsonb, ${[...list[0].from]}::text[], ${[...list[0].to]}::text[]) r
    ORDER BY r.item`);
  return rows.map(({ item, correctionCount, correctionId, ...flat }) => ({ ...split<CorrectionOutcome>(flat), correctionCount, correctionId, retries: list[item - 1].attempt - 1 }));
}

export async function correct(a: CorrectArgs): Promise<CorrectionRow> {
  const [row] = await correctTogether([a]);
  return row;
}

export type BulkArgs = {
  ids: string[];
  to: IntentStatus;
  allowedFrom: readonly IntentStatus[];
  lockTimeoutMs: number;
  actor: string;
  reason: string | null;
  details?: JsonObject | null;
  lock: 'try' | 'wait';
};
export type BulkRow = Outcome<BulkOutcome> & { intentId: string };

export async function bulkUpdateStatusCall(a: BulkArgs): Promise<BulkRow[]> {
  const rows = await queryOnPool<Flat & { intentId: string }>(Prisma.sql`
    SELECT r.outcome, r.intent_id::text AS "intentId", r.prior_status AS "priorStatus", true AS "tookLock", r.lock_wait_ms AS "lockWaitMs", ${INTENT_OF_R}
    FROM bridge_bulk_update_status(${a.ids}::uuid[], ${a.to}, ${[...a.allowedFrom]}::text[], ${a.lockTimeoutMs}::int, ${a.actor}, ${a.reason}::text,
      ${a.details ? JSON.stringify(a.details) : null}::jsonb, ${a.lock}::text) r`);
  return rows.map(({ intentId, ...flat }) => ({ ...split<BulkOutcome>(flat), intentId }));
}

/** A keyed call's stored outcome (the body bridge_complete_key wrote), read back into the shape a call returns. */
type StoredIntent = { id: string; status: IntentStatus; payload: JsonObject; source: string; version: number; is_replay: boolean; created_at: string; updated_at: string };
export type StoredOutcome = { outcome: string; intent: StoredIntent | null; priorStatus: IntentStatus | null; correctionCount?: number; retries?: number; correctionId?: string | null };

export function isStoredOutcome(body: unknown): body is StoredOutcome {
  return typeof body === 'object' && body !== null && typeof (body as { outcome?: unknown }).outcome === 'string';
}

export function rowFromStored(i: StoredIntent | null): IntentRow | null {
  if (!i) return null;
  return { id: i.id, status: i.status, payload: i.payload, source: i.source, version: i.version, isReplay: i.is_replay, createdAt: new Date(i.created_at), updatedAt: new Date(i.updated_at) };
}
