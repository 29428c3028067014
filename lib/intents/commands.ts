import { db } from '@/lib/db/client';
import { SQLSTATE, sqlState } from '@/lib/db/sqlstate';
import { concurrencySettings, type LockStrategy } from '@/lib/env';
import { announceCommitted } from '@/lib/live/announce';
import { noteActor } from '@/lib/locks/actors';
import { findRowLockHolders } from '@/lib/locks/holders';
import { formatDuration } from '@/lib/locks/format';
import { backoffDelayMs, sleep } from '@/lib/shared/backoff';
import { DatabaseUnderPressureError, NotFoundError } from '@/lib/shared/errors';
import { withDeadlockRetry } from './deadlock';
import { InvalidTransitionError, LockTimeoutError, OperationCancelledError, VersionConflictError, type LockHolder } from './errors';
import { recordEngineEvent, recordLockFailure } from './engine-events';
import { runIdempotent } from './idempotency';
import { correctionIdFor } from './json';
import type { JsonObject } from '@/lib/shared/json';
import { recordLockTimeoutWait, recordLockWait, recordOutcome, type Outcome } from './outcomes';
import { insertIntentWithAudit, selectLabelledBackends, toIntent, type IntentRow } from './repository';
import { bulkStatusSchema, createIntentSchema, reevaluateInputSchema, updateStatusInputSchema, type BulkStatusInput, type CreateIntentInput, type ReevaluateInput, type UpdateStatusInput } from './schemas';
import { parseInput } from '@/lib/shared/validation';
import { allowedNextStatuses, canTransition, INTENT_STATUSES, statusAfterCorrection, transitionLabel, type IntentStatus } from '@/lib/shared/intent-states';
import {
  bulkUpdateStatusCall,
  rowFromStored,
  updateStatus,
  type BulkRow,
  type CorrectionRow,
  type KeyRef,
  type LockMode,
  type StatusRow,
  type StoredOutcome,
} from './statements';
import { inTurn, RowHeldRefusal, TurnTimedOut, waitOnRow } from './row-waits';
import { correctInTurn } from './together';
import type { Actor, BulkStatusResult, Intent, ReevaluateResult, UpdateStatusResult } from '@/lib/shared/intent-types';
import { FencingTokenStaleError } from '@/lib/leases/errors';
import type { Fencing } from '@/lib/leases/schemas';

/**
 * The intent engine: the one implementation behind the JSON API and the server actions. Each command is one
 * database call per attempt (lib/intents/statements.ts → prisma/functions), which decides, writes, audits and
 * stores an idempotency key's outcome in one statement, and answers with an outcome column. What stays here: input
 * parsing, the attempt loop (strategy, backoff, deadlock retry), the outcome → result or typed error mapping, the
 * counts, and the live announcement.
 */

export type CommandOptions = {
  /** Overrides the configured lock timeout (ms) for this call. */
  lockTimeoutMs?: number;
  /** Overrides the configured strategy for this call (replay compares strategies run against run). */
  strategy?: LockStrategy;
  /** Tag created intents as replay data (hidden from operators unless asked for). */
  isReplay?: boolean;
  /** Extra audit details for each change a bulk update makes (a console bulk batch adds its batch id). */
  auditDetails?: JsonObject;
  /**
   * A fence set by the calling code itself, not by its input: a worker's run passes its claim fence here, on the
   * `worker-claim:` resources no input may name (lib/leases/schemas.ts). Used when the input carries none.
   */
  fencing?: Fencing;
};

/** What each outcome counts as in outcome_counts (the Contention page's and /api/metrics' names). */
const COUNTED: Record<string, Outcome> = {
  applied: 'success',
  already_applied: 'already_applied',
  stale: 'stale_expected_version',
  invalid_transition: 'invalid_transition',
  refused: 'invalid_transition',
  not_found: 'not_found',
  fencing_token_stale: 'fencing_token_stale',
};

/**
 * Who holds the row lock we waited for: read from the row (lib/locks/holders.ts), so any backend is named — ours,
 * a worker's, a person's psql. Only when the row says nothing (the holder has just finished, or holds it jointly)
 * do the backends labelled as working on these intents stand in.
 */
/** Who holds the rows of these intents, and which of them are held (known only when read from the rows). */
type HolderLook = { holders: LockHolder[]; heldIntentIds: string[] | null };

async function lockHolders(intentIds: string[]): Promise<HolderLook> {
  // Commands refused together (a burst on one held row) share one look, instead of each taking a connection for it.
  const key = intentIds.join(',');
  let pending = holderLooks.get(key);
  if (!pending) {
    pending = lookForHolders(intentIds).finally(() => holderLooks.delete(key));
    holderLooks.set(key, pending);
  }
  return pending;
}

const holderLooks = new Map<string, Promise<HolderLook>>();

async function lookForHolders(intentIds: string[]): Promise<HolderLook> {
  const fromRow = await findRowLockHolders(intentIds);
  if (fromRow.length) {
    const holders = [...new Map(fromRow.map(({ intentId: _intent, ...h }) => [h.pid, h])).values()];
    return { holders, heldIntentIds: [...new Set(fromRow.map((h) => h.intentId))] };
  }
  const rows = await db().$transaction((tx) => selectLabelledBackends(tx, intentIds)).catch(() => []);
  return { holders: rows.map((h) => ({ ...h, transactionStartedAt: h.transactionStartedAt?.toISOString() ?? null, transactionAgeMs: null })), heldIntentIds: null };
}

function describeHolders(holders: LockHolder[]): string {
  const one = (h: LockHolder) =>
    `${h.pid} (${h.applicationName || 'no application name'}, ${h.state ?? 'state unknown'}${h.transactionAgeMs !== null ? `, transaction open for ${formatDuration(h.transactionAgeMs)}` : ''})`;
  return holders.length ? ` It is held by backend ${holders.map(one).join(', ')}.` : '';
}

/** What a refusal names: the one intent, or of several the ones found held ("intent 201dabe8…, 1 of the 3"). */
function lockedWhat(intentIds: string[], held: string[] | null): string {
  if (intentIds.length === 1) return `intent ${intentIds[0]}`;
  if (held && held.length && held.length < intentIds.length) return `${held.length === 1 ? 'intent' : 'intents'} ${held.join(', ')} (${held.length} of the ${intentIds.length})`;
  return `${intentIds.length} intents`;
}

/**
 * Lock waits that ran out (including NOWAIT), and commands refused without waiting because the row is held and
 * enough already wait for it (docs/LOCKING.md), become LockTimeoutError naming the holder; cancels become
 * OperationCancelledError.
 */
async function mapLockErrors(err: unknown, operation: string, intentIds: string[], nowait: boolean, lockTimeoutMs: number, actor: string, asked?: JsonObject): Promise<never> {
  const state = sqlState(err);
  if (err instanceof RowHeldRefusal || state === SQLSTATE.rowWaitersFull || state === SQLSTATE.rowBusy) {
    recordOutcome(operation, 'lock_timeout', '', 1, intentIds);
    const { holders, heldIntentIds } = await lockHolders(intentIds);
    const what = lockedWhat(intentIds, heldIntentIds);
    const already = err instanceof RowHeldRefusal ? 'another command from this console already waits for it' : 'as many commands as may wait on one row already do';
    // On the intent's timeline as a refusal without a wait, saying why (not as a NOWAIT nobody asked for).
    recordLockFailure({ intentIds, operation, actor, nowait, refusedWithoutWaiting: true, lockTimeoutMs, holder: holders[0], asked });
    throw new LockTimeoutError(
      `${what} is locked by another transaction and ${already}, so this one was refused without waiting.${describeHolders(holders)} Try again, or see the Locks page.`,
      { intentIds, nowait, refusedWithoutWaiting: true, holders },
    );
  }
  if (state === SQLSTATE.lockNotAvailable || err instanceof TurnTimedOut) {
    recordOutcome(operation, 'lock_timeout', '', 1, intentIds);
    if (!nowait) recordLockTimeoutWait(operation, lockTimeoutMs);
    const { holders, heldIntentIds } = await lockHolders(intentIds);
    recordLockFailure({ intentIds, operation, actor, nowait, lockTimeoutMs, holder: holders[0], asked });
    const who = describeHolders(holders);
    const what = lockedWhat(intentIds, heldIntentIds);
    throw new LockTimeoutError(
      nowait
        ? `${what} is locked by another transaction and NOWAIT was asked for.${who}`
        : `Waited ${formatDuration(lockTimeoutMs)} for the lock on ${what} without getting it.${who} Try again, or see the Locks page.`,
      { intentIds, nowait, lockTimeoutMs: nowait ? undefined : lockTimeoutMs, holders },
    );
  }
  if (state === SQLSTATE.queryCanceled) {
    throw new OperationCancelledError(`The operation on ${intentIds.join(', ')} was cancelled (statement timeout or an operator's cancel); nothing was applied.`);
  }
  throw err;
}

/**
 * Row locks (FOR UPDATE) the commands of this process took, per operation, as their statements reported them: the
 * benchmark counts with it that uncontended adaptive corrections take none.
 */
export const rowLocksTaken: Record<string, number> = {};

/** The lock mode of a call under a strategy: the first try, and what an optimistic caller falls back to. */
function firstMode(strategy: LockStrategy, nowait: boolean): LockMode {
  if (nowait) return 'nowait';
  return strategy === 'pessimistic' ? 'wait' : strategy === 'optimistic' ? 'none' : 'adaptive';
}

/**
 * The attempt loop. One call under `wait`, `nowait` or `adaptive` (adaptive queues on the row lock inside the same
 * call when it races). Under `none` (optimistic) a call that raced is retried after a backoff, and after the last
 * try one call under the row lock bounds the worst case. A deadlock victim is retried by withDeadlockRetry; a
 * unique violation (the same correction committed between our check and our write) is asked again, and the next
 * call finds it already applied.
 */
async function attempt<R extends { outcome: string; tookLock: boolean; lockWaitMs: number }>(
  operation: string,
  intentIds: string[],
  first: LockMode,
  call: (lock: LockMode, attempt: number) => Promise<R>,
  onBusy: (wait: () => Promise<R>) => Promise<R> = (wait) => waitOnRow(wait),
): Promise<R> {
  const { retry } = concurrencySettings();
  // A row lock is first asked for only if it is free ('try'); waiting for a held one is decided here (onBusy).
  const once = (lock: LockMode, n: number) =>
    withDeadlockRetry(operation, intentIds, () => call(lock === 'wait' ? 'try' : lock, n)).catch((err: unknown) => {
      if (sqlState(err) === SQLSTATE.uniqueViolation) return call(lock, n);
      if (sqlState(err) === SQLSTATE.rowBusy) return onBusy(() => withDeadlockRetry(operation, intentIds, () => call('wait', n)));
      throw err;
    });
  const counted = (row: R) => {
    if (row.tookLock) {
      recordLockWait(operation, row.lockWaitMs);
      rowLocksTaken[operation] = (rowLocksTaken[operation] ?? 0) + 1;
    }
    return row;
  };
  if (first !== 'none') return counted(await once(first, 1));
  for (let n = 1; n <= retry.maxAttempts; n++) {
    const row = await once('none', n);
    if (row.outcome !== 'raced') return counted(row);
    recordOutcome(operation, 'version_conflict', '', 1, intentIds);
    recordOutcome(operation, 'retry', '', 1, intentIds);
    if (n < retry.maxAttempts) await sleep(backoffDelayMs(n, retry));
  }
  recordOutcome(operation, 'pessimistic_fallback', '', 1, intentIds);
  const row = await once('wait', retry.maxAttempts + 1);
  if (row.outcome === 'raced') throw new Error('a version moved under a row lock: this cannot happen');
  return counted(row);
}

function invalidTransition(row: { id: string; status: IntentStatus }, to: IntentStatus): InvalidTransitionError {
  const allowed = allowedNextStatuses(row.status);
  return new InvalidTransitionError(
    `Intent ${row.id} is ${row.status} and cannot move to ${to}. ${allowed.length ? `From ${row.status} it can move to ${allowed.join(', ')}.` : `${row.status} is terminal.`}`,
    { intentId: row.id, from: row.status, to, allowed },
  );
}

/** The rows every command shares: not found, and the intent the call answered with. */
function presentIntent(id: string, intent: IntentRow | null): IntentRow {
  if (!intent) throw new NotFoundError(`Intent ${id}`, { id });
  return intent;
}

/**
 * Creates an intent (RECEIVED, version 0). With an idempotency key, a repeat — a caller retrying after a lost answer
 * or a 503 — gets the intent the first request created, as it was created, and nothing new is made.
 */
export async function createIntent(input: CreateIntentInput, actor: Actor, options: CommandOptions = {}): Promise<Intent> {
  const { payload, source, idempotencyKey } = parseInput(createIntentSchema, input);
  const work = async (key: KeyRef | undefined) => {
    const row = await db().$transaction((tx) => insertIntentWithAudit(tx, { payload: payload as JsonObject, source, actor: actor.name, isReplay: options.isReplay ?? false, key }));
    announceCommitted({ workQueued: true });
    return toIntent(row);
  };
  const replay = (stored: StoredOutcome) => {
    const row = rowFromStored(stored.intent);
    if (!row) throw new Error('a keyed create was stored without its intent: this cannot happen');
    return toIntent(row);
  };
  return runIdempotent({ key: idempotencyKey, scope: actor.name, operation: 'create', request: { payload, source } }, work, replay);
}

type StatusCall = { id: string; target: IntentStatus; expectedVersion?: number; fencing?: Fencing };

/** A status update's outcome as the caller sees it: the result, or the typed refusal. Fresh and replayed alike. */
function statusAnswer(call: StatusCall, row: Pick<StatusRow, 'outcome' | 'intent'>): UpdateStatusResult {
  const intent = presentIntent(call.id, row.intent);
  switch (row.outcome) {
    case 'applied':
    case 'already_applied':
      return { intent: toIntent(intent), alreadyApplied: row.outcome === 'already_applied' };
    case 'stale':
      throw new VersionConflictError(call.id, call.expectedVersion!, intent.version);
    case 'invalid_transition':
      throw invalidTransition(intent, call.target);
    case 'fencing_token_stale':
      throw new FencingTokenStaleError(call.fencing!.resource, call.fencing!.token, null);
    default:
      throw new Error(`the status update of ${call.id} ended as ${row.outcome}: this cannot happen`);
  }
}

/** A lease-protected write refused for a stale token: nothing was written, so the refusal is recorded on its own. */
function recordFenceRefusal(operation: string, id: string, actor: string, fencing: Fencing): void {
  recordEngineEvent({ intentIds: [id], kind: 'fence_refused', operation, actor, details: { resource: fencing.resource, token: fencing.token } });
}

function countAnswer(operation: string, outcome: string, intentIds: readonly string[], transition = '') {
  const counted = COUNTED[outcome];
  if (counted) recordOutcome(operation, counted, counted === 'success' ? transition : '', 1, intentIds);
}

export async function updateIntentStatus(input: UpdateStatusInput, actor: Actor, options: CommandOptions = {}): Promise<UpdateStatusResult> {
  const parsed = parseInput(updateStatusInputSchema, input);
  const { status: target, expectedVersion, idempotencyKey, nowait = false, reason } = parsed;
  const fencing = parsed.fencing ?? options.fencing;
  // One spelling per intent: the idempotency hash and the lock label derive from the id text.
  const id = parsed.id.toLowerCase();
  const operation = 'update_status';
  const settings = concurrencySettings();
  const lockTimeoutMs = options.lockTimeoutMs ?? settings.lockTimeoutMs;
  const call: StatusCall = { id, target, expectedVersion, fencing };
  await noteActor(actor.name);
  const run = (key: KeyRef | undefined, lock: LockMode) =>
    updateStatus({
      id,
      to: target,
      allowedFrom: INTENT_STATUSES.filter((s) => canTransition(s, target)),
      expectedVersion: expectedVersion ?? null,
      lock,
      lockTimeoutMs,
      contendedWithinMs: settings.contentionMemoryMs,
      actor: actor.name,
      reason: reason ?? null,
      key: key ?? null,
      fencing: fencing ?? null,
    });
  const work = async (key: KeyRef | undefined) => {
    try {
      const go = (held: () => void) =>
        attempt(operation, [id], firstMode(options.strategy ?? settings.strategies.update_status, nowait), (lock) => run(key, lock), (wait) => {
          held();
          return waitOnRow(wait);
        });
      // One status update of an intent at the database at a time from this process (lib/intents/row-waits.ts); a
      // NOWAIT one never waits, so it needs no turn and fails fast as asked.
      const row = nowait ? await go(() => undefined) : await inTurn(`update_status:${id}`, lockTimeoutMs, () => new RowHeldRefusal([id]), go);
      countAnswer(operation, row.outcome, [id], row.priorStatus ? transitionLabel(row.priorStatus, target) : '');
      if (row.outcome === 'applied') announceCommitted({ workQueued: target === 'RECEIVED' });
      if (row.outcome === 'fencing_token_stale') recordFenceRefusal(operation, id, actor.name, fencing!);
      return statusAnswer(call, row);
    } catch (err) {
      // What was asked, with its reason, stays on the intent's timeline beside the refusal: nothing else keeps it.
      const asked = { to: target, ...(reason ? { reason } : {}) };
      return sqlState(err) || err instanceof RowHeldRefusal || err instanceof TurnTimedOut ? mapLockErrors(err, operation, [id], nowait, lockTimeoutMs, actor.name, asked) : Promise.reject(err);
    }
  };
  const replay = (stored: StoredOutcome) => statusAnswer(call, { outcome: stored.outcome as StatusRow['outcome'], intent: rowFromStored(stored.intent) });
  return runIdempotent({ key: idempotencyKey, scope: actor.name, operation, intentId: id, request: { id, status: target, expectedVersion, nowait, reason, fencing } }, work, replay);
}

/** A bulk update's rows as the caller sees them: every intent, or the refusal naming each intent that stopped it. */
function bulkAnswer(target: IntentStatus, rows: BulkRow[]): BulkStatusResult {
  const missing = rows.filter((r) => r.outcome === 'not_found').map((r) => r.intentId);
  if (missing.length) throw new NotFoundError(missing.length === 1 ? `Intent ${missing[0]}` : `${missing.length} of the ${rows.length} intents`, { missing }, missing.length > 1);
  const refused = rows.filter((r) => r.outcome === 'invalid_transition').map((r) => r.intent!);
  if (refused.length) {
    throw new InvalidTransitionError(`${refused.length} of the intents cannot move to ${target}; nothing was changed.`, {
      to: target,
      intents: refused.map((r) => ({ intentId: r.id, from: r.status, allowed: allowedNextStatuses(r.status), message: invalidTransition(r, target).message })),
    });
  }
  return { intents: rows.map((r) => toIntent(r.intent!)), alreadyApplied: rows.filter((r) => r.outcome === 'already_applied').map((r) => r.intentId) };
}

/** All-or-nothing status change of many intents, locked in id order so bulk updates never deadlock each other. */
export async function bulkUpdateStatus(input: BulkStatusInput, actor: Actor, options: CommandOptions = {}): Promise<BulkStatusResult> {
  const { ids: rawIds, status: target, reason } = parseInput(bulkStatusSchema, input);
  const ids = [...new Set(rawIds.map((i) => i.toLowerCase()))].sort();
  const operation = 'bulk_update_status';
  const lockTimeoutMs = options.lockTimeoutMs ?? concurrencySettings().lockTimeoutMs;
  const allowedFrom = INTENT_STATUSES.filter((s) => canTransition(s, target));
  await noteActor(actor.name);
  const send = (lock: 'try' | 'wait') =>
    withDeadlockRetry(operation, ids, () => bulkUpdateStatusCall({ ids, to: target, allowedFrom, lockTimeoutMs, actor: actor.name, reason: reason ?? null, details: options.auditDetails ?? null, lock }));
  let rows: BulkRow[];
  try {
    // Bulk updates of this process go to the database one at a time; when the one there finds a row held, those
    // waiting behind it are refused at once (their intents may differ, so as the pool's bound, not a 423).
    rows = await inTurn('bulk_update_status', lockTimeoutMs, () => new DatabaseUnderPressureError('lock_waiters', 1), (held) =>
      send('try').catch((err: unknown) => {
        if (sqlState(err) !== SQLSTATE.rowBusy) throw err;
        held();
        return waitOnRow(() => send('wait'));
      }),
    );
  } catch (err) {
    return mapLockErrors(err, operation, ids, false, lockTimeoutMs, actor.name);
  }
  if (rows[0]) recordLockWait(operation, rows[0].lockWaitMs);
  const stopped = rows.find((r) => r.outcome === 'not_found' || r.outcome === 'invalid_transition');
  if (stopped) countAnswer(operation, stopped.outcome, rows.filter((r) => r.outcome === stopped.outcome).map((r) => r.intentId));
  const result = bulkAnswer(target, rows);
  const applied = rows.filter((r) => r.outcome === 'applied').length;
  if (applied) announceCommitted({ workQueued: target === 'RECEIVED' });
  recordOutcome(operation, 'success', `*->${target}`, applied);
  recordOutcome(operation, 'already_applied', '', result.alreadyApplied.length, result.alreadyApplied);
  return result;
}

/** What a correction does to each status, as pairs for the statement: from[i] becomes to[i]. */
const CORRECTABLE = (() => {
  const pairs = INTENT_STATUSES.flatMap((from) => {
    const to = statusAfterCorrection(from);
    return to ? [{ from, to }] : [];
  });
  return { from: pairs.map((p) => p.from), to: pairs.map((p) => p.to) };
})();

type CorrectionCall = { id: string; correctionId: string; expectedVersion?: number; fencing?: Fencing };

/** A correction's outcome as the caller sees it: the result, or the typed refusal. Fresh and replayed alike. */
function correctionAnswer(call: CorrectionCall, row: Pick<CorrectionRow, 'outcome' | 'intent' | 'correctionCount' | 'retries' | 'correctionId'>): ReevaluateResult {
  const intent = presentIntent(call.id, row.intent);
  switch (row.outcome) {
    case 'applied':
    case 'already_applied':
      return {
        intentId: call.id,
        status: intent.status,
        version: intent.version,
        correctionId: row.correctionId ?? call.correctionId,
        correctionCount: row.correctionCount,
        alreadyApplied: row.outcome === 'already_applied',
        retries: row.retries,
      };
    case 'stale':
      throw new VersionConflictError(call.id, call.expectedVersion!, intent.version);
    case 'refused':
      throw new InvalidTransitionError(`Intent ${call.id} is ${intent.status}: corrections are refused on COMPLETED and FAILED intents.`, { intentId: call.id, from: intent.status });
    case 'fencing_token_stale':
      throw new FencingTokenStaleError(call.fencing!.resource, call.fencing!.token, null);
    default:
      throw new Error(`the correction of ${call.id} ended as ${row.outcome}: this cannot happen`);
  }
}

/**
 * A correction: deep-merges `diff` into the payload (PROCESSED becomes CORRECTED). Adaptive by default: no row lock
 * while the intent is uncontended, the row lock at once when it is (docs/LOCKING.md). The correction id is derived
 * from the intent and the canonical diff, so the same correction twice is recognised as already applied; one the
 * caller saw applied and then undone, sent again with its expected version, is applied again
 * (bridge_correction_repeats, prisma/functions/30_correct.sql).
 */
export async function reevaluateIntent(input: ReevaluateInput, actor: Actor, options: CommandOptions = {}): Promise<ReevaluateResult> {
  const parsed = parseInput(reevaluateInputSchema, input);
  const id = parsed.id.toLowerCase();
  const diff = parsed.diff as JsonObject;
  const { source, reason, expectedVersion, idempotencyKey } = parsed;
  const fencing = parsed.fencing ?? options.fencing;
  const metadata = (parsed.metadata ?? null) as JsonObject | null;
  const operation = 'reevaluate';
  const settings = concurrencySettings();
  const lockTimeoutMs = options.lockTimeoutMs ?? settings.lockTimeoutMs;
  const call: CorrectionCall = { id, correctionId: correctionIdFor(id, diff), expectedVersion, fencing };
  const write = { id, correctionId: call.correctionId, diff, source, reason, metadata, actor: actor.name, expectedVersion: expectedVersion ?? null, fencing: fencing ?? null, ...CORRECTABLE };
  await noteActor(actor.name);
  const work = async (key: KeyRef | undefined) => {
    try {
      const first = firstMode(options.strategy ?? settings.strategies.reevaluate, false);
      const row = await attempt(
        operation,
        [id],
        first,
        (lock, n) => correctInTurn({ ...write, lock: lock === 'nowait' || lock === 'try' ? 'wait' : lock, lockTimeoutMs, contendedWithinMs: settings.contentionMemoryMs, key: key ?? null, attempt: n }),
        // Corrections that take the row lock decide about a held row in their queue (lib/intents/together.ts).
        (wait) => wait(),
      );
      // An applied correction is a transition too (PROCESSED → CORRECTED, or CORRECTED again): counted under it.
      countAnswer(operation, row.outcome, [id], row.priorStatus && row.intent ? transitionLabel(row.priorStatus, row.intent.status) : '');
      if (row.outcome === 'applied') announceCommitted();
      if (row.outcome === 'fencing_token_stale') recordFenceRefusal(operation, id, actor.name, fencing!);
      return correctionAnswer(call, row);
    } catch (err) {
      return sqlState(err) || err instanceof RowHeldRefusal ? mapLockErrors(err, operation, [id], false, lockTimeoutMs, actor.name) : Promise.reject(err);
    }
  };
  const replay = (stored: StoredOutcome) =>
    correctionAnswer(call, { outcome: stored.outcome as CorrectionRow['outcome'], intent: rowFromStored(stored.intent), correctionCount: stored.correctionCount ?? 0, retries: stored.retries ?? 0, correctionId: stored.correctionId ?? null });
  return runIdempotent({ key: idempotencyKey, scope: actor.name, operation, intentId: id, request: { id, diff, source, reason, metadata, expectedVersion, fencing } }, work, replay);
}

