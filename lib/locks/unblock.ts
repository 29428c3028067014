import { z } from 'zod';
import { wholeNumber } from '@/lib/shared/strict';
import { requirePermission } from '@/lib/auth/errors';
import type { Permission } from '@/lib/auth/permissions';
import type { AuthActor } from '@/lib/auth/types';
import { db, type Tx } from '@/lib/db/client';
import { announceCommitted } from '@/lib/live/announce';
import { sqlState } from '@/lib/db/sqlstate';
import { DatabaseUnderPressureError, DomainError, NotFoundError, ValidationError } from '@/lib/shared/errors';
import { storable, STORABLE_MESSAGE } from '@/lib/shared/text';
import { CancelFirstError, NotBlockingError, NotSignallableError } from './errors';
import { readResolvedBackends, withSnapshotTransaction } from './queries';
import { RECENT_BLOCKING_MS, recentBlockingOf } from './history/episodes';
import { blocksOthers, impactOf, isIdleInTransaction, waitersIndex, waitingBehind } from './tree';
import type { UnblockImpact } from './types';

/**
 * Guarded unblocking. Before anything is signalled the impact is computed from a fresh snapshot: how
 * many sessions wait behind the backend, how old its transaction is, which intents it is about. Where a cancel can
 * help (the backend runs a query) it comes first: terminate is refused unless a cancel of that same backend (pid
 * and start time, so a reused pid does not count) was tried within CANCEL_BEFORE_TERMINATE_MS and it still blocks
 * someone. A blocker idle in its transaction ignores a cancel, so it may be terminated at once. A reason is required; each
 * action is written to audit_events (`backend_cancel` / `backend_terminate`) in the statement that sends the
 * signal, one row per intent the backend is about (one row with no intent when it is about none). A refusal by these
 * guards is audited the same way (`backend_cancel_refused` / `backend_terminate_refused`).
 */

export const CANCEL_BEFORE_TERMINATE_MS = 10 * 60_000;
/** After signalling, how long we watch for the waiters to be let through before reporting. */
const SETTLE_MS = 1500;

export const unblockInputSchema = z.object({
  // A backend pid is a positive 32-bit integer (PostgreSQL's int4); anything else is not a backend of this database.
  pid: wholeNumber({ min: 1, max: 2_147_483_647, what: 'a backend pid (a whole number)' }),
  reason: z
    .string({ error: 'is required: say why this backend is being stopped' })
    .trim()
    .min(5, 'is required: say why this backend is being stopped (at least 5 characters)')
    .max(500, 'must be at most 500 characters')
    .refine(storable, { error: STORABLE_MESSAGE }),
});
export type UnblockInput = z.input<typeof unblockInputSchema>;

export type UnblockAction = 'cancel' | 'terminate';

export type UnblockResult = {
  action: UnblockAction;
  pid: number;
  /** What pg_cancel_backend / pg_terminate_backend answered (false: the backend was gone or not signalled). */
  signalled: boolean;
  impact: UnblockImpact;
  /** Right after: is the backend still there, and how many still wait behind it (null if that could not be read). */
  after: { alive: boolean; waitingBehind: number } | null;
  auditIds: string[];
};

function parseInput(input: UnblockInput): { pid: number; reason: string } {
  const parsed = unblockInputSchema.safeParse(input);
  if (!parsed.success) {
    throw new ValidationError(parsed.error.issues.map((i) => ({ field: i.path.join('.') || 'body', message: i.message })));
  }
  return parsed.data;
}

/** The impact of stopping `pid`, from a fresh self-limiting snapshot; 404 when no such backend is in this database. */
export async function unblockImpact(pid: number): Promise<UnblockImpact> {
  const impact = await withSnapshotTransaction(async (tx) => {
    const { backends, now } = await readResolvedBackends(tx);
    if (!backends.some((b) => b.pid === pid)) {
      // Not waiting, blocking or in a transaction: still a backend of ours? Then its impact is nil but real.
      const idle = await tx.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ${pid}::int AND datname = current_database() AND pid <> pg_backend_pid()`;
      if (Number(idle[0].n) === 0) return null;
      const { backends: all } = await readResolvedBackendsIncluding(tx, pid);
      return impactOf(all, pid, now);
    }
    return impactOf(backends, pid, now);
  });
  if (!impact) throw new NotFoundError(`Backend ${pid}`, { pid, hint: 'It may have finished already; refresh the Locks page.' });
  // Read apart from the snapshot: the history is the console's own table, not lock state, and a database too busy to
  // answer it leaves the guard with what it sees this instant. The same for the rows an idle transaction holds: that
  // read scans the intents table, and one that runs out of time must not take the rest of the impact with it.
  const [recentBlocking, held] = await Promise.all([
    recentBlockingOf(impact).catch(() => null),
    isIdleInTransaction(impact.state) ? withSnapshotTransaction((tx) => readHeldIntentRows(tx, pid)).catch(() => []) : Promise.resolve([]),
  ]);
  const known = new Set(impact.intents.map((i) => i.id));
  const intents = [...impact.intents, ...held.filter((id) => !known.has(id)).map((id) => ({ id, via: 'row-holds' as const }))];
  return { ...impact, recentBlocking, heldIntentRows: held, intents };
}

/**
 * The intents whose rows a backend's open transaction has locked or changed: their `xmax` is its transaction id. A
 * granted row lock leaves no trace in pg_locks (only a waiter for it does), so this is the one way to see what an idle
 * transaction keeps from everyone else when nobody happens to be waiting. It reads the whole table, so it runs only
 * for one backend that is idle in a transaction holding a lock on `intents`, when someone asks about that backend.
 */
async function readHeldIntentRows(tx: Tx, pid: number): Promise<string[]> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    WITH me AS (
      SELECT a.backend_xid AS xid FROM pg_stat_activity a
      WHERE a.pid = ${pid}::int AND a.backend_xid IS NOT NULL
        AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'relation' AND l.relation = 'intents'::regclass AND l.granted)
    )
    SELECT r.id::text AS id FROM intents r, me WHERE r.xmax = me.xid ORDER BY r.id LIMIT 20`;
  return rows.map((r) => r.id);
}

/** One backend that is neither waiting, blocking nor in a transaction (the general read leaves those out). */
async function readResolvedBackendsIncluding(tx: Tx, pid: number) {
  const rows = await tx.$queryRaw<
    { pid: number; applicationName: string | null; user: string | null; clientAddr: string | null; backendType: string | null; state: string | null; query: string | null; backendStart: Date | null; queryStart: Date | null; stateChange: Date | null }[]
  >`SELECT pid, application_name AS "applicationName", usename::text AS "user", client_addr::text AS "clientAddr",
           backend_type AS "backendType", state, left(query, 1000) AS query, backend_start AS "backendStart", query_start AS "queryStart",
           state_change AS "stateChange"
    FROM pg_stat_activity WHERE pid = ${pid}::int`;
  return {
    backends: rows.map((r) => ({
      ...r,
      backendStart: r.backendStart?.toISOString() ?? null,
      queryStart: r.queryStart?.toISOString() ?? null,
      stateChange: r.stateChange?.toISOString() ?? null,
      xactStart: null,
      waitEventType: null,
      waitEvent: null,
      waitingSince: null,
      blockedBy: [],
      operation: null,
      // Outside a transaction it holds no actor lock (they end with the transaction).
      actor: null,
      intents: [],
    })),
  };
}

/** Whether a cancel of this very backend (pid and start time) was tried recently: terminate is then on offer. */
export async function recentCancelExists(pid: number, backendStart: string | null): Promise<boolean> {
  const since = new Date(Date.now() - CANCEL_BEFORE_TERMINATE_MS);
  const rows = await db().$queryRaw<{ n: bigint }[]>`
    SELECT count(*) AS n FROM audit_events
    WHERE action = 'backend_cancel' AND at >= ${since}
      AND details->>'pid' = ${String(pid)} AND details->>'backendStart' IS NOT DISTINCT FROM ${backendStart}`;
  return Number(rows[0].n) > 0;
}

/** What an unblock's audit rows say about the backend, accepted or refused. */
function auditDetails(action: UnblockAction, reason: string, impact: UnblockImpact, onlyIfIdleInTransaction = false) {
  return {
    pid: impact.pid,
    backendStart: impact.backendStart,
    reason,
    applicationName: impact.applicationName,
    actor: impact.actor,
    user: impact.user,
    state: impact.state,
    query: impact.query?.slice(0, 300) ?? null,
    xactStart: impact.xactStart,
    transactionAgeMs: impact.transactionAgeMs,
    stateAgeMs: impact.stateAgeMs,
    withoutCancel: action === 'terminate' && onlyIfIdleInTransaction,
    waitingBehind: impact.waitingBehind,
    directWaiters: impact.directWaiters,
    intents: impact.intents.map((i) => i.id),
    waiterIntents: impact.waiterIntents,
  };
}

/** Sends the signal and writes the audit rows in one statement; the signal goes only to the same process (pid + start). */
async function signalAndAudit(action: UnblockAction, actor: AuthActor, reason: string, impact: UnblockImpact, onlyIfIdleInTransaction = false) {
  const details = JSON.stringify(auditDetails(action, reason, impact, onlyIfIdleInTransaction));
  const intentIds = impact.intents.map((i) => i.id);
  const backendStart = impact.backendStart ? new Date(impact.backendStart) : null;
  let rows: { id: bigint; signalled: boolean }[];
  try {
    rows = await signalStatement(action, actor, details, intentIds, impact.pid, backendStart, onlyIfIdleInTransaction);
    announceCommitted();
  } catch (err) {
    // The console's database role may signal only backends of roles it belongs to, unless it has pg_signal_backend.
    if (sqlState(err) === INSUFFICIENT_PRIVILEGE) {
      throw new NotSignallableError(
        `The console's database role is not allowed to signal backend ${impact.pid} (it belongs to another role, or a superuser). Grant the console's role pg_signal_backend, or ask a database administrator.`,
        { pid: impact.pid, user: impact.user },
      );
    }
    throw err;
  }
  return { signalled: rows.some((r) => r.signalled), auditIds: rows.map((r) => String(r.id)) };
}

const INSUFFICIENT_PRIVILEGE = '42501';

function signalStatement(action: UnblockAction, actor: AuthActor, details: string, intentIds: string[], pid: number, backendStart: Date | null, onlyIfIdleInTransaction: boolean) {
  return action === 'cancel'
    ? db().$queryRaw<{ id: bigint; signalled: boolean }[]>`
          WITH s AS (
            SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = ${pid}::int AND date_trunc('milliseconds', backend_start) IS NOT DISTINCT FROM ${backendStart}::timestamptz)
                        THEN pg_cancel_backend(${pid}::int) ELSE false END AS ok
          )
          INSERT INTO audit_events (intent_id, action, actor, details)
          SELECT i::uuid, 'backend_cancel', ${actor.name}, ${details}::jsonb || jsonb_build_object('signalled', s.ok)
          FROM s, unnest(CASE WHEN cardinality(${intentIds}::text[]) = 0 THEN ARRAY[NULL]::text[] ELSE ${intentIds}::text[] END) AS i
          RETURNING id, (details->>'signalled')::boolean AS signalled`
    : db().$queryRaw<{ id: bigint; signalled: boolean }[]>`
          WITH s AS (
            SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = ${pid}::int AND date_trunc('milliseconds', backend_start) IS NOT DISTINCT FROM ${backendStart}::timestamptz
                                     AND (NOT ${onlyIfIdleInTransaction} OR state IN ('idle in transaction', 'idle in transaction (aborted)')))
                        THEN pg_terminate_backend(${pid}::int, 2000) ELSE false END AS ok
          )
          INSERT INTO audit_events (intent_id, action, actor, details)
          SELECT i::uuid, 'backend_terminate', ${actor.name}, ${details}::jsonb || jsonb_build_object('signalled', s.ok)
          FROM s, unnest(CASE WHEN cardinality(${intentIds}::text[]) = 0 THEN ARRAY[NULL]::text[] ELSE ${intentIds}::text[] END) AS i
          RETURNING id, (details->>'signalled')::boolean AS signalled`;
}

/**
 * A guard's refusal is audited like the action it refused (`backend_cancel_refused` / `backend_terminate_refused`,
 * one row per intent the backend is about), with the refusal's code and message: who tried to stop which backend,
 * and why they were not let, is part of an incident's record. The refusal is then raised as it was.
 */
async function refusedAndAudited(action: UnblockAction, actor: AuthActor, reason: string, impact: UnblockImpact, refusal: DomainError): Promise<never> {
  const details = JSON.stringify({ ...auditDetails(action, reason, impact), refused: { code: refusal.code, message: refusal.message } });
  const intentIds = impact.intents.map((i) => i.id);
  await db().$executeRaw`
    INSERT INTO audit_events (intent_id, action, actor, details)
    SELECT i::uuid, ${`backend_${action}_refused`}, ${actor.name}, ${details}::jsonb
    FROM unnest(CASE WHEN cardinality(${intentIds}::text[]) = 0 THEN ARRAY[NULL]::text[] ELSE ${intentIds}::text[] END) AS i`;
  announceCommitted();
  throw refusal;
}

/** Watches briefly for the waiters to be let through (or the backend to go), for an honest report. */
async function settle(pid: number, backendStart: string | null): Promise<UnblockResult['after']> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    let after: UnblockResult['after'];
    try {
      after = await withSnapshotTransaction(async (tx) => {
        const { backends } = await readResolvedBackends(tx);
        const alive = await tx.$queryRaw<{ n: bigint }[]>`
          SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ${pid}::int AND date_trunc('milliseconds', backend_start) IS NOT DISTINCT FROM ${backendStart ? new Date(backendStart) : null}::timestamptz`;
        return { alive: Number(alive[0].n) > 0, waitingBehind: waitingBehind(waitersIndex(backends), pid).size };
      });
    } catch (err) {
      if (err instanceof DatabaseUnderPressureError) return null;
      throw err;
    }
    if (!after.alive || after.waitingBehind === 0 || Date.now() > deadline) return after;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function prepare(action: UnblockAction, actor: AuthActor, permission: Permission, input: UnblockInput) {
  requirePermission(actor, permission);
  const { pid, reason } = parseInput(input);
  const impact = await unblockImpact(pid);
  if (impact.backendType !== 'client backend') {
    const refusal = new NotSignallableError(`Backend ${pid} is a ${impact.backendType ?? 'system'} process, not a client session; the console does not signal it.`, { pid, backendType: impact.backendType });
    return refusedAndAudited(action, actor, reason, impact, refusal);
  }
  return { pid, reason, impact };
}

/** Signals and audits, or audits the refusal when the database does not let the console's role signal it. */
async function signalOrRefuse(action: UnblockAction, actor: AuthActor, reason: string, impact: UnblockImpact, onlyIfIdleInTransaction = false) {
  try {
    return await signalAndAudit(action, actor, reason, impact, onlyIfIdleInTransaction);
  } catch (err) {
    if (err instanceof NotSignallableError) return refusedAndAudited(action, actor, reason, impact, err);
    throw err;
  }
}

/** pg_cancel_backend: stops the backend's current query (its transaction then aborts and releases its locks). */
export async function cancelBackend(actor: AuthActor, input: UnblockInput): Promise<UnblockResult> {
  const { pid, reason, impact } = await prepare('cancel', actor, 'locks.cancel', input);
  const { signalled, auditIds } = await signalOrRefuse('cancel', actor, reason, impact);
  const after = signalled ? await settle(pid, impact.backendStart) : null;
  return { action: 'cancel', pid, signalled, impact, after, auditIds };
}

/**
 * pg_terminate_backend: ends the session, only while it still blocks someone. A backend running a query is
 * cancelled first: terminate follows only once a cancel of this very backend was tried in the last
 * CANCEL_BEFORE_TERMINATE_MS. A backend idle in its transaction has no query to cancel, so it is terminated at once
 * — and only if it is still idle in its transaction when the signal is sent (checked in the signalling statement).
 */
export async function terminateBackend(actor: AuthActor, input: UnblockInput): Promise<UnblockResult> {
  const { pid, reason, impact } = await prepare('terminate', actor, 'locks.terminate', input);
  const atOnce = isIdleInTransaction(impact.state);
  if (!atOnce && !(await recentCancelExists(pid, impact.backendStart))) {
    const refusal = new CancelFirstError(
      `Cancel backend ${pid} first: terminate is allowed only after a cancel of the same backend was tried in the last ${CANCEL_BEFORE_TERMINATE_MS / 60_000} minutes and it still blocks others.`,
      { pid, windowMs: CANCEL_BEFORE_TERMINATE_MS },
    );
    return refusedAndAudited('terminate', actor, reason, impact, refusal);
  }
  if (!blocksOthers(impact)) {
    const refusal = new NotBlockingError(
      `Backend ${pid} blocks nobody, holds no intent's row, and the lock history saw nobody wait for its transaction in the last ${RECENT_BLOCKING_MS / 1000} seconds, so there is nothing to terminate it for.`,
      { pid },
    );
    return refusedAndAudited('terminate', actor, reason, impact, refusal);
  }
  const { signalled, auditIds } = await signalOrRefuse('terminate', actor, reason, impact, atOnce);
  const after = signalled ? await settle(pid, impact.backendStart) : null;
  return { action: 'terminate', pid, signalled, impact, after, auditIds };
}
