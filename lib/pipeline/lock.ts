import type pg from 'pg';
import { createPool, createPrisma, databaseUrl, type Db } from '@/lib/db/client';
import { env } from '@/lib/env';
import { recordLockFailure } from '@/lib/intents/engine-events';
import { LockTimeoutError, type LockHolder } from '@/lib/intents/errors';
import { noteActor } from '@/lib/locks/actors';

/**
 * The pipeline's execution lock: a transaction-scoped advisory lock on (namespace, hashtext(intent id)), taken
 * with pg_try_advisory_xact_lock (NOWAIT: a second execution of the same intent is refused at once) and held by an
 * open transaction for the whole run.
 *
 * Why not the intent's row lock: the bridges change the intent through the engine's commands, which take that row
 * lock on their own connections; a run holding it would wait on itself. The advisory lock is a different lock, so
 * the engine's row locks (and everyone else's) are never behind it, and it cannot take part in a deadlock with them:
 * its holder never waits for it, and nobody waits for the holder's transaction. Transaction-scoped, it works behind
 * PgBouncer in transaction mode (the transaction keeps its server connection), and it goes away with the
 * transaction, the connection or the process.
 *
 * The holding transactions get a pool of their own (PIPELINE_LOCK_POOL_SIZE): they sit idle for a run's length,
 * and must never take the connections the engine's commands need to make progress.
 *
 * Workers do not hold this lock for their runs: a worker's claim already excludes every other worker, and it
 * excludes operators' runs through the same lock, for a moment only. The claim statement tries the lock for each
 * row it claims (held until the claim commits) and leaves a row whose lock an operator's run holds; an operator's
 * run, once it holds the lock, opens its run only when no claim of the intent is running (startRuns). Either the
 * claim committed before the operator took the lock (the operator's run then sees it and is refused, 423) or it
 * tried the lock after (and left the row). docs/WORKERS.md, "The execution lock", has the argument.
 */
export const PIPELINE_LOCK_NAMESPACE = 1112687687; // "BRDG"

const globalForLock = globalThis as unknown as { bridgeLockPrisma?: Db; bridgeLockPool?: pg.Pool };

function lockDb(): Db {
  if (!globalForLock.bridgeLockPrisma) {
    globalForLock.bridgeLockPool = createPool(databaseUrl(), env().PIPELINE_LOCK_POOL_SIZE);
    globalForLock.bridgeLockPrisma = createPrisma(globalForLock.bridgeLockPool);
  }
  return globalForLock.bridgeLockPrisma;
}

export async function disconnectLockDb(): Promise<void> {
  const client = globalForLock.bridgeLockPrisma;
  const pool = globalForLock.bridgeLockPool;
  globalForLock.bridgeLockPrisma = undefined;
  globalForLock.bridgeLockPool = undefined;
  await client?.$disconnect();
  await pool?.end();
}

/** The label the Locks page reads: which operation on which intent this backend is about. */
export const pipelineLockLabel = (intentId: string) => `bridge:pipeline_execute:${intentId}`;

type HolderRow = { pid: number; applicationName: string | null; state: string | null; transactionStartedAt: string | null; transactionAgeMs: number | null; query: string | null };

class LockBusy extends Error {
  constructor(readonly holders: LockHolder[]) {
    super('pipeline lock busy');
  }
}

/**
 * Runs `body` while holding the intent's execution lock; refuses at once with a 423 `lock_timeout` naming the holder
 * when another execution has it.
 */
export async function withPipelineLock<T>(intentId: string, body: () => Promise<T>, actor?: string): Promise<T> {
  if (actor) await noteActor(actor);
  try {
    return await lockDb().$transaction(
      async (tx) => {
        // One round trip whichever way it goes: the lock, and only when it is refused, who holds it (a CASE arm's
        // subquery runs only when that arm is taken).
        const [row] = await tx.$queryRaw<{ label: string; locked: boolean; holders: HolderRow[] | null }[]>`
          WITH attempt AS (
            SELECT set_config('application_name', ${pipelineLockLabel(intentId)}, true) AS label,
                   pg_try_advisory_xact_lock(${PIPELINE_LOCK_NAMESPACE}::int, hashtext(${intentId})) AS locked
          )
          SELECT label, locked,
                 CASE WHEN NOT locked THEN (
                   SELECT json_agg(json_build_object(
                            'pid', a.pid, 'applicationName', a.application_name, 'state', a.state,
                            'transactionStartedAt', to_char(a.xact_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'transactionAgeMs', (extract(epoch FROM now() - a.xact_start) * 1000)::int,
                            'query', left(a.query, 500)))
                   FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                     AND l.classid = ${PIPELINE_LOCK_NAMESPACE}::bigint::oid
                     AND l.objid = (hashtext(${intentId})::bigint & 4294967295)::oid)
                 END AS holders
          FROM attempt`;
        if (!row.locked) throw new LockBusy(row.holders ?? []);
        // Who the run is for, held as long as the run: the Locks page names them (prisma/functions/00_helpers.sql).
        if (actor) await tx.$queryRaw`SELECT pg_advisory_xact_lock_shared(bridge_actor_space(), hashtext(${actor}))::text`;
        return body();
      },
      { maxWait: 5_000, timeout: env().PIPELINE_MAX_RUN_MS },
    );
  } catch (err) {
    if (!(err instanceof LockBusy)) throw err;
    const holders = err.holders;
    recordLockFailure({ intentIds: [intentId], operation: 'pipeline_execute', actor: actor ?? null, nowait: true, lockTimeoutMs: 0, holder: holders[0] });
    const who = holders.length ? ` It is held by backend ${holders.map((h) => `${h.pid} (${h.applicationName ?? 'unnamed'}${h.transactionStartedAt ? `, since ${h.transactionStartedAt}` : ''})`).join(', ')}.` : '';
    throw new LockTimeoutError(`The pipeline of intent ${intentId} is already running (its execution lock is taken; NOWAIT).${who}`, {
      intentIds: [intentId],
      nowait: true,
      holders,
    });
  }
}
