import { db } from '@/lib/db/client';
import { pgErrorOf } from '@/lib/db/pg-capture';
import { SQLSTATE, sqlState } from '@/lib/db/sqlstate';
import { concurrencySettings } from '@/lib/env';
import { DeadlockError } from './errors';
import { inReplayWork, recordOutcome } from './outcomes';
import { insertDeadlockEvent } from './repository';
import { backoffDelayMs, sleep } from '@/lib/shared/backoff';

/**
 * Runs a transaction, retrying it when Postgres chose it as a deadlock victim (40P01), with the configured backoff.
 * Each deadlock is recorded with Postgres' own DETAIL (who waited on whom) and the intents involved: `transaction`
 * runs through `pg` (queryOnPool or transactionOnPool), whose errors carry it.
 */
export async function withDeadlockRetry<T>(operation: string, intentIds: string[], transaction: (attempt: number) => Promise<T>): Promise<T> {
  const settings = concurrencySettings();
  const maxAttempts = settings.deadlockMaxAttempts;
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction(attempt);
    } catch (err) {
      if (sqlState(err) !== SQLSTATE.deadlock) throw err;
      const said = pgErrorOf(err);
      const detail = said ? [said.message, said.detail].filter(Boolean).join('\n') : 'deadlock detected';
      const retried = attempt < maxAttempts;
      // The event first, then the counters: a counter never counts a deadlock whose event was not written
      // (the invariant checker holds the counters to their events).
      await db().$transaction((tx) => insertDeadlockEvent(tx, { operation, intentIds, detail, attempt, retried, isReplay: inReplayWork() }));
      recordOutcome(operation, 'deadlock_detected', '', 1, intentIds);
      recordOutcome(operation, retried ? 'deadlock_retried' : 'deadlock_exhausted', '', 1, intentIds);
      if (!retried) {
        throw new DeadlockError(`A deadlock on intents ${intentIds.join(', ')} persisted through ${maxAttempts} attempts; try again.`, {
          intentIds,
          attempts: maxAttempts,
          detail,
        });
      }
      await sleep(backoffDelayMs(attempt, settings.retry));
    }
  }
}
