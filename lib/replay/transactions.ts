import { Prisma } from '@/generated/prisma/client';
import { transactionOnPool } from '@/lib/db/client';
import { SQLSTATE, sqlState } from '@/lib/db/sqlstate';
import { withDeadlockRetry } from '@/lib/intents/deadlock';
import { LockTimeoutError } from '@/lib/intents/errors';
import { NotFoundError } from '@/lib/shared/errors';
import { recordLockWait, recordOutcome } from '@/lib/intents/outcomes';
import { labelTransaction, selectIntentForUpdate, updateStatusWithAudit } from '@/lib/intents/repository';
import { canTransition, type IntentStatus } from '@/lib/shared/intent-states';
import { announceCommitted } from '@/lib/live/announce';
import type { Actor } from '@/lib/shared/intent-types';

/**
 * The transactions the replay measures that are not the engine's commands, built from the engine's own repository
 * functions and deadlock handling so they lock, label and record exactly as the engine does. They run on
 * transactionOnPool, so a deadlock is recorded with Postgres' own DETAIL.
 * - an execution under NOWAIT that holds its intent for a chosen time: the nowait-executions scenario needs a hold
 *   long enough for the second execution to arrive while the first still runs, which the real pipeline's bridges
 *   (a few statements each) do not give;
 * - the crossing-order transaction, which the engine's commands avoid by design (bulk updates lock in id order),
 *   to measure deadlock detection and recovery;
 * - a bare take-and-release of a row lock, the lock-acquisition measurement.
 */

const PIPELINE_STEPS: IntentStatus[] = ['NORMALIZED', 'PROCESSED'];

/**
 * Locks the intent with NOWAIT, works for `workMs` (the pipeline's steps) and moves it along its steps. A second
 * execution of the same intent meanwhile fails at once with a LockTimeoutError instead of queueing behind it.
 */
export async function executePipelineStandIn(id: string, actor: Actor, options: { workMs: number; lockTimeoutMs: number; onLocked?: () => void }): Promise<{ version: number }> {
  const operation = 'pipeline_execute';
  try {
    return await withDeadlockRetry(operation, [id], () =>
      transactionOnPool(async (query) => {
          await labelTransaction(query, `bridge:${operation}:${id}`, options.lockTimeoutMs);
          const started = performance.now();
          const row = await selectIntentForUpdate(query, id, true);
          recordLockWait(operation, performance.now() - started);
          if (!row) throw new NotFoundError(`Intent ${id}`, { id });
          options.onLocked?.();
          let current = row;
          for (const step of PIPELINE_STEPS) {
            if (!canTransition(current.status, step)) continue;
            await query(Prisma.sql`SELECT pg_sleep(${options.workMs / PIPELINE_STEPS.length / 1000})`);
            const next = await updateStatusWithAudit(query, {
              id,
              fromVersion: current.version,
              from: current.status,
              to: step,
              actor: actor.name,
              action: 'pipeline_step',
              details: { replay: 'nowait-executions' },
            });
            if (!next) throw new Error('the version moved under a NOWAIT lock: this cannot happen');
            current = next;
          }
          return { version: current.version };
      }),
    ).then((result) => {
      announceCommitted();
      recordOutcome(operation, 'success');
      return result;
    });
  } catch (err) {
    if (sqlState(err) === SQLSTATE.lockNotAvailable) {
      recordOutcome(operation, 'lock_timeout');
      throw new LockTimeoutError(`intent ${id} is being executed by another transaction and NOWAIT was asked for.`, { intentIds: [id], nowait: true });
    }
    throw err;
  }
}

const toggled = (status: IntentStatus): IntentStatus => (status === 'FAILED' ? 'RECEIVED' : 'FAILED');

/**
 * Locks `first`, waits at `barrier` (first attempt only) until the crossing transaction holds its own first lock,
 * then locks `second`: two of these in opposite order deadlock, Postgres picks a victim after deadlock_timeout,
 * and withDeadlockRetry retries it. Both intents are toggled RECEIVED ↔ FAILED, so every commit is visible.
 */
export async function crossingOrderTransaction(
  first: string,
  second: string,
  actor: Actor,
  options: { lockTimeoutMs: number; barrier: () => Promise<void> },
): Promise<{ attempts: number }> {
  const operation = 'replay_crossing_order';
  let attempts = 0;
  await withDeadlockRetry(operation, [first, second], (attempt) => {
    attempts = attempt;
    return transactionOnPool(async (query) => {
      await labelTransaction(query, `bridge:${operation}:${first}`, options.lockTimeoutMs);
      const a = await selectIntentForUpdate(query, first, false);
      if (attempt === 1) await options.barrier();
      const b = await selectIntentForUpdate(query, second, false);
      if (!a || !b) throw new NotFoundError(`Intent ${!a ? first : second}`);
      for (const row of [a, b]) {
        await updateStatusWithAudit(query, {
          id: row.id,
          fromVersion: row.version,
          from: row.status,
          to: toggled(row.status),
          actor: actor.name,
          action: 'status_change',
          details: { replay: 'crossing-deadlock' },
        });
      }
    });
  });
  announceCommitted();
  return { attempts };
}

/** Takes and releases the row lock of one intent the way the engine does; returns the lock statement's own time (ms). */
export async function lockAndRelease(id: string, lockTimeoutMs: number): Promise<{ acquireMs: number }> {
  return transactionOnPool(async (query) => {
    await labelTransaction(query, `bridge:replay_lock:${id}`, lockTimeoutMs);
    const started = performance.now();
    const row = await selectIntentForUpdate(query, id, false);
    const acquireMs = performance.now() - started;
    if (!row) throw new NotFoundError(`Intent ${id}`, { id });
    return { acquireMs };
  });
}
