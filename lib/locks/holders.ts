import { z } from 'zod';
import { parseInput } from '@/lib/intents/schemas';
import { withSnapshotTransaction } from './queries';

/**
 * Who holds an intent's row lock right now, for the Intents list and the intent page ("locked by pid X for 2 min").
 * A transaction that locks or updates a row writes its transaction id into the row version's xmax; the backend
 * whose pg_stat_activity.backend_xid is that id is the holder, whoever it is (the engine, a worker, a person's
 * psql). A holder that has committed or rolled back has no backend_xid any more, so it is not reported. Rows
 * locked by several transactions at once (shared locks) carry a multixact id instead and are not resolved here.
 * Read under the Locks page's own short timeouts.
 */
export type RowHolder = {
  intentId: string;
  pid: number;
  applicationName: string | null;
  state: string | null;
  /** When the holder's transaction began: it has held the row at most since then. */
  xactStart: string | null;
  /** The database's clock at the time of reading. */
  now: string;
};

export const holdersQuerySchema = z.strictObject({
  ids: z
    .string({ error: 'must be a comma-separated list of intent ids' })
    .transform((v) => [...new Set(v.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean))])
    .pipe(z.array(z.uuid({ error: 'must list intent ids (UUIDs)' })).min(1, { error: 'must name at least one intent' }).max(200, { error: 'must name at most 200 intents' })),
});

export async function rowLockHolders(input: unknown): Promise<RowHolder[]> {
  const { ids } = parseInput(holdersQuerySchema, input);
  const rows = await withSnapshotTransaction(
    (tx) => tx.$queryRaw<{ intentId: string; pid: number; applicationName: string | null; state: string | null; xactStart: Date | null; now: Date }[]>`
      SELECT i.id::text AS "intentId", a.pid, a.application_name AS "applicationName", a.state, a.xact_start AS "xactStart", clock_timestamp() AS now
      FROM intents i
      JOIN pg_stat_activity a ON a.backend_xid = i.xmax AND a.datname = current_database() AND a.pid <> pg_backend_pid()
      WHERE i.id = ANY(${ids}::uuid[]) AND i.xmax <> '0'::xid`,
  );
  return rows.map((r) => ({ ...r, xactStart: r.xactStart?.toISOString() ?? null, now: r.now.toISOString() }));
}
