import { z } from 'zod';
import type { Tx } from '@/lib/db/client';
import { parseInput } from '@/lib/shared/validation';
import { withSnapshotTransaction } from './queries';

/**
 * Who holds the row lock on these intents, whichever program it is (the engine, a worker, a person's psql): read
 * from the row itself. A row locked or updated by an open transaction carries that transaction's id in `xmax`, and
 * the transaction holds an exclusive lock on its own id (pg_locks, locktype `transactionid`) until it ends — so the
 * holder is found even when nobody waits for it any more (the waiter that timed out has just left the queue, so the
 * Locks page's pg_blocking_pids view has nothing to show). Runs in the Locks page's self-limiting snapshot
 * transaction: under pressure it gives up quickly instead of adding to it.
 */
export type RowLockHolder = {
  intentId: string;
  pid: number;
  applicationName: string | null;
  state: string | null;
  transactionStartedAt: string | null;
  transactionAgeMs: number | null;
  query: string | null;
};

type Row = Omit<RowLockHolder, 'transactionStartedAt' | 'transactionAgeMs'> & { transactionStartedAt: Date | null; transactionAgeMs: number | null };

export async function readRowLockHolders(tx: Tx, intentIds: string[]): Promise<RowLockHolder[]> {
  const rows = await tx.$queryRaw<Row[]>`
    SELECT DISTINCT ON (r.id, a.pid) r.id::text AS "intentId", a.pid, a.application_name AS "applicationName", a.state,
           a.xact_start AS "transactionStartedAt",
           (extract(epoch FROM clock_timestamp() - a.xact_start) * 1000)::float8 AS "transactionAgeMs",
           left(a.query, 200) AS query
    FROM intents r
    JOIN pg_locks l ON l.locktype = 'transactionid' AND l.granted AND l.mode = 'ExclusiveLock' AND l.transactionid = r.xmax
    JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE r.id = ANY(${intentIds}::uuid[]) AND r.xmax <> '0'::xid AND a.pid <> pg_backend_pid()
    ORDER BY r.id, a.pid
    LIMIT 10`;
  return rows.map((r) => ({
    ...r,
    transactionStartedAt: r.transactionStartedAt?.toISOString() ?? null,
    transactionAgeMs: r.transactionAgeMs === null ? null : Math.round(r.transactionAgeMs),
  }));
}

/** readRowLockHolders in its own short snapshot transaction; an empty list when the database is too busy to say. */
export async function findRowLockHolders(intentIds: string[]): Promise<RowLockHolder[]> {
  return withSnapshotTransaction((tx) => readRowLockHolders(tx, intentIds)).catch(() => []);
}

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}';

export const holdersQuerySchema = z.strictObject({
  ids: z
    .string({ error: 'must be a comma-separated list of intent ids' })
    // Said as a pattern too, so the API document tells callers (and the contract test's generator) the shape.
    .regex(new RegExp(`^\\s*${UUID}\\s*(,\\s*${UUID}\\s*){0,199}$`), { error: 'must be a comma-separated list of at most 200 intent ids (UUIDs)' })
    .transform((v) => [...new Set(v.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean))])
    .pipe(z.array(z.uuid({ error: 'must list intent ids (UUIDs)' })).min(1, { error: 'must name at least one intent' }).max(200, { error: 'must name at most 200 intents' })),
});

/**
 * For the Intents list and the intent page ("locked by pid X for 2 min → Locks"): the holders of these intents'
 * rows, from `?ids=a,b,…`. Unlike findRowLockHolders, a database under pressure is an answer (503), not "nobody".
 */
export async function rowLockHolders(input: unknown): Promise<RowLockHolder[]> {
  const { ids } = parseInput(holdersQuerySchema, input);
  return withSnapshotTransaction((tx) => readRowLockHolders(tx, ids));
}
