import { z } from 'zod';
import { db } from '@/lib/db/client';
import { InvalidTransitionError } from '@/lib/intents/errors';
import { NotFoundError } from '@/lib/shared/errors';
import { intentIdSchema } from '@/lib/shared/fields';
import { parseInput } from '@/lib/shared/validation';
import type { Actor } from '@/lib/shared/intent-types';
import { announceCommitted } from '@/lib/live/announce';

/**
 * Operators' controls over the queue, each one statement with its audit event: pause and resume claiming for every
 * worker, retry a scheduled intent now, cancel a scheduled retry. Running claims are not touched: a worker's claim
 * is its own until it ends or is rescued.
 */

/** The Workers page's inputs, validated by its actions (lib/http/action-input.ts). */
export const workersPausedSchema = z.strictObject({ paused: z.boolean({ error: 'must be true or false' }) });
export const queuedIntentSchema = z.strictObject({ intentId: intentIdSchema });

export async function setClaimingPaused(paused: boolean, actor: Actor): Promise<{ paused: boolean; changed: boolean }> {
  const [row] = await db().$queryRaw<{ changed: boolean }[]>`
    WITH before AS (SELECT paused FROM worker_control WHERE id), changed AS (
      UPDATE worker_control SET paused = ${paused}, changed_by = ${actor.name}, changed_at = now()
      WHERE id AND paused IS DISTINCT FROM ${paused}
      RETURNING paused
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT NULL, CASE WHEN ${paused} THEN 'workers_paused' ELSE 'workers_resumed' END, ${actor.name}, '{}'::jsonb FROM changed
    )
    SELECT EXISTS (SELECT 1 FROM changed) AS changed`;
  // Resumed: the idle workers claim now rather than at their next poll.
  if (row.changed && !paused) announceCommitted({ workQueued: true });
  return { paused, changed: row.changed };
}

type QueueChange = { intentId: string; state: string; runAfter: Date } | undefined;

async function changeScheduled(idInput: unknown, actor: Actor, change: 'retry_now' | 'cancel_retry'): Promise<{ intentId: string; state: string; runAfter: string }> {
  const id = parseInput(intentIdSchema, idInput, 'intentId').toLowerCase();
  const rows = await db().$queryRaw<NonNullable<QueueChange>[]>`
    WITH changed AS (
      UPDATE intent_work SET
        run_after = CASE WHEN ${change} = 'retry_now' THEN now() ELSE run_after END,
        state = CASE WHEN ${change} = 'cancel_retry' THEN 'cancelled' ELSE state END,
        finished_at = CASE WHEN ${change} = 'cancel_retry' THEN now() ELSE finished_at END
      WHERE intent_id = ${id}::uuid AND state IN ('available', 'retryable')
      RETURNING intent_id, state, run_after, attempt
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT intent_id, ${change}, ${actor.name}, jsonb_build_object('attempt', attempt) FROM changed
    )
    SELECT intent_id::text AS "intentId", state, run_after AS "runAfter" FROM changed`;
  if (!rows[0]) {
    const [work] = await db().$queryRaw<{ state: string }[]>`SELECT state FROM intent_work WHERE intent_id = ${id}::uuid`;
    if (!work) throw new NotFoundError(`Queued work for intent ${id}`, { intentId: id });
    throw new InvalidTransitionError(`Intent ${id} is not waiting in the queue (its work is ${work.state}); only a waiting intent can be retried now or cancelled.`, {
      intentId: id,
      state: work.state,
    });
  }
  announceCommitted({ workQueued: change === 'retry_now' });
  return { ...rows[0], runAfter: rows[0].runAfter.toISOString() };
}

/** A scheduled retry (or a waiting intent) becomes due now. */
export const retryNow = (intentId: unknown, actor: Actor) => changeScheduled(intentId, actor, 'retry_now');

/** A scheduled retry is cancelled: the intent stays as it is and no worker claims it again (an operator's retry of it re-queues it). */
export const cancelScheduledRetry = (intentId: unknown, actor: Actor) => changeScheduled(intentId, actor, 'cancel_retry');
