import { Prisma } from '@/generated/prisma/client';
import { queryOnPool } from '@/lib/db/client';
import { oneLineError } from '@/lib/db/pg-capture';
import type { JsonObject } from '@/lib/shared/json';
import type { LockHolder } from './errors';

/**
 * What the engine saw happen to an intent without changing it, kept one row each (intent_engine_events) for the
 * intent's timeline (lib/timeline). Lock waits that ended with the lock are written by the waiting command's own
 * statement (prisma/functions, bridge_note_lock_wait), in its transaction; what is written here happened in a
 * transaction that wrote nothing (a lock timeout rolled back, a refusal, a replayed answer), so it is recorded
 * afterwards, once, on the refusal's path only, without holding the answer up (a NOWAIT refusal must stay
 * immediate): `engineEventsWritten()` waits for the records under way (tests, shutdown). A failed record is logged
 * and never changes the caller's answer.
 */
export type EngineEventKind = 'lock_wait' | 'lock_timeout' | 'idempotent_repeat' | 'fence_refused';

type NewEngineEvent = {
  intentIds: readonly string[];
  kind: Exclude<EngineEventKind, 'lock_wait'>;
  operation: string;
  actor: string | null;
  waitedMs?: number | null;
  outcome?: 'timed_out' | 'refused' | null;
  holderPid?: number | null;
  details?: JsonObject | null;
};

const underWay = new Set<Promise<void>>();

/** Resolves once every record started so far is written (or has failed and been logged). */
export async function engineEventsWritten(): Promise<void> {
  await Promise.all([...underWay]);
}

/** Starts writing the record; the caller goes on with its answer. */
export function recordEngineEvent(e: NewEngineEvent): void {
  if (e.intentIds.length === 0) return;
  const writing = writeEngineEvent(e).finally(() => underWay.delete(writing));
  underWay.add(writing);
}

async function writeEngineEvent(e: NewEngineEvent): Promise<void> {
  try {
    await queryOnPool(Prisma.sql`
      INSERT INTO intent_engine_events (intent_id, kind, operation, actor, waited_ms, outcome, holder_pid, details)
      SELECT x, ${e.kind}, ${e.operation}, ${e.actor}::text, ${e.waitedMs ?? null}::float8, ${e.outcome ?? null}::text,
             ${e.holderPid ?? null}::int, ${e.details ? JSON.stringify(e.details) : null}::jsonb
      FROM unnest(${[...e.intentIds]}::uuid[]) x`);
  } catch (err) {
    console.error(`[engine-events] recording a ${e.kind} of ${e.intentIds.join(', ')} failed: ${oneLineError(err)}`);
  }
}

/**
 * A lock wait that ran out (lock_timeout: it waited the whole timeout) or a NOWAIT refusal (it did not wait), with
 * the holder the engine named in its answer: its pid, application and state, so the timeline names it as the
 * refusal did, and what the command asked for (`asked`), which nothing else keeps since nothing was written.
 */
export function recordLockFailure(a: {
  intentIds: readonly string[];
  operation: string;
  actor: string | null;
  nowait: boolean;
  /** Refused without waiting because enough commands already wait for the row (docs/LOCKING.md), NOWAIT or not. */
  refusedWithoutWaiting?: boolean;
  lockTimeoutMs: number;
  holder: LockHolder | undefined;
  /** What the refused command asked for (a status change: its target status and reason). */
  asked?: JsonObject;
}): void {
  const holder: JsonObject = a.holder ? { holderApplication: a.holder.applicationName, holderState: a.holder.state } : {};
  const atOnce = a.nowait || a.refusedWithoutWaiting === true;
  const why: JsonObject = a.refusedWithoutWaiting ? { refusedWithoutWaiting: true } : a.nowait ? { nowait: true } : { lockTimeoutMs: a.lockTimeoutMs };
  recordEngineEvent({
    intentIds: a.intentIds,
    kind: 'lock_timeout',
    operation: a.operation,
    actor: a.actor,
    waitedMs: atOnce ? 0 : a.lockTimeoutMs,
    outcome: atOnce ? 'refused' : 'timed_out',
    holderPid: a.holder?.pid ?? null,
    details: { ...why, ...holder, ...(a.asked ? { asked: a.asked } : {}) },
  });
}
