import { z } from 'zod';
import { Prisma } from '@/generated/prisma/client';
import { queryOnPool } from '@/lib/db/client';

/**
 * Positions in the live feed, taken from the database, never from a clock.
 *
 * Audit ids come from a sequence, but a lower id can commit after a higher one (two transactions, the first one
 * slower), so "everything up to id N" is not a safe place to resume from. A position is therefore a pair read in one
 * snapshot: the highest audit id visible then (`maxId`) and the oldest transaction still running then (`xmin`, from
 * `pg_snapshot_xmin(pg_current_snapshot())`). Every audit row not visible in that snapshot has either `id > maxId` or
 * was written by a transaction `>= xmin`, so resuming with `id > maxId OR tx_id >= xmin` misses nothing; it may
 * re-send a few events, which only invalidate a cache once more.
 *
 * The hub (hub.ts) does better between its own rounds: it keeps its last snapshot's in-progress list
 * (`pg_snapshot_xip`) and bound (`pg_snapshot_xmax`), and `tx_id >= xmax OR tx_id = ANY(xip)` — exactly the rows that
 * snapshot could not see — returns each committed event exactly once. Not `id > maxId`: a transaction whose first
 * write is the audit INSERT draws its id (nextval, column 1) before it is given an xid (the tx_id default, the last
 * column), so a snapshot can fall between the two while a higher id commits; that row is neither above maxId nor in
 * xip, yet it is not visible yet (test/live/positions.test.ts forces exactly this).
 */
export type LiveEvent = {
  id: string;
  intentId: string | null;
  action: string;
  toStatus: string | null;
  /**
   * The primary's WAL position (pg_lsn text, `16/B374D848`) at or past this change's commit: a read that waits for it
   * (`Bridge-Read-After`) shows the change, also on a read replica (lib/db/read.ts). Every event of one batch carries
   * the same position, read in the statement that found them.
   */
  lsn: string;
};

export type Snapshot = { maxId: string; xmin: string; xmax: string; xip: string[] };

/** The wire form of a position: `<maxId>.<xmin>`, sent as the SSE `id:` and read back from `Last-Event-ID`. */
const INT8_MAX = 9223372036854775807n;
export const positionSchema = z
  .string()
  .regex(/^\d{1,19}\.\d{1,19}$/, { error: 'is not a live-feed position', abort: true })
  // Both halves are compared as Postgres bigints: nineteen digits can exceed one.
  .refine((s) => s.split('.').every((part) => BigInt(part) <= INT8_MAX), { error: 'is not a live-feed position' })
  .transform((s) => {
    const [maxId, xmin] = s.split('.');
    return { maxId, xmin };
  });

export type Position = z.output<typeof positionSchema>;

export function formatPosition(p: { maxId: string; xmin: string }): string {
  return `${p.maxId}.${p.xmin}`;
}

/** More events than this since a position: clients are told to refetch everything instead of receiving them. */
export const CATCH_UP_LIMIT = 500;

type SnapshotRow = { maxId: string; xmin: string; xmax: string; xip: string[] };
type ChangesRow = SnapshotRow & { lsn: string; events: Omit<LiveEvent, 'lsn'>[] };

/** The snapshot's four columns, read in the statement that uses them so that rows and snapshot agree. */
const SNAPSHOT_COLUMNS = Prisma.sql`
  (SELECT coalesce(max(id), 0) FROM audit_events)::text AS "maxId",
  pg_snapshot_xmin(pg_current_snapshot())::text AS xmin,
  pg_snapshot_xmax(pg_current_snapshot())::text AS xmax,
  ARRAY(SELECT x::text FROM pg_snapshot_xip(pg_current_snapshot()) x) AS xip`;

/** Where the feed stands now (for a page about to load its data, or a new subscriber). */
export async function currentSnapshot(): Promise<Snapshot> {
  const [row] = await queryOnPool<SnapshotRow>(Prisma.sql`SELECT ${SNAPSHOT_COLUMNS}`);
  return row;
}

/**
 * The audit events `after` selects, oldest first, with the snapshot they were read in, in one statement. These run
 * on the pool directly (one statement each, no transaction): the hub reads up to twenty times a second under load,
 * and through Prisma's raw-query runtime each read cost the server more than the statement did.
 */
export type Changes = Snapshot & { events: LiveEvent[]; overflow: boolean; lsn: string };

async function changes(after: Prisma.Sql, limit: number): Promise<Changes> {
  // The WAL insert position, asked in the statement whose snapshot sees these events: every transaction that
  // snapshot sees as committed had written its commit record before the statement began, and the insert position
  // never moves backwards, so the position is at or past every one of their commits.
  const [row] = await queryOnPool<ChangesRow>(Prisma.sql`
    SELECT ${SNAPSHOT_COLUMNS},
           pg_current_wal_insert_lsn()::text AS lsn,
           coalesce((
             SELECT json_agg(e ORDER BY e.seq) FROM (
               SELECT id AS seq, id::text AS id, intent_id::text AS "intentId", action, to_status::text AS "toStatus"
               FROM audit_events
               WHERE ${after}
               ORDER BY id LIMIT ${limit + 1}::int
             ) e
           ), '[]'::json) AS events`);
  return withOverflow(row, limit);
}

/**
 * Events committed since the hub's last snapshot, exactly once, with the new snapshot. `limit + 1` rows come back at
 * most; more than `limit` means "too many, refetch all".
 */
export function changesSinceSnapshot(since: Snapshot, limit = CATCH_UP_LIMIT): Promise<Changes> {
  return changes(Prisma.sql`tx_id >= ${since.xmax}::bigint OR tx_id = ANY(${since.xip}::bigint[])`, limit);
}

/** Events a client may have missed since a position it was given (resume after a disconnect): at least once. */
export function changesSincePosition(since: Position, limit = CATCH_UP_LIMIT): Promise<Changes> {
  return changes(Prisma.sql`id > ${since.maxId}::bigint OR tx_id >= ${since.xmin}::bigint`, limit);
}

function withOverflow(row: ChangesRow, limit: number): Changes {
  const events = row.events.map(({ id, intentId, action, toStatus }) => ({ id, intentId, action, toStatus, lsn: row.lsn }));
  const overflow = events.length > limit;
  return { maxId: row.maxId, xmin: row.xmin, xmax: row.xmax, xip: row.xip, events: overflow ? [] : events, overflow, lsn: row.lsn };
}
