import type { Prisma } from '@/generated/prisma/client';
import { db, type Tx } from '@/lib/db/client';
import { oneLineError } from '@/lib/db/pg-capture';
import { INTENT_STATUSES, type IntentStatus } from '@/lib/shared/intent-states';

/**
 * Intents per status without counting rows. Triggers on `intents` (migration `…_status_counts`) append a delta for
 * every status change in the statement that makes it; `bridge_fold_status_deltas()` moves the deltas into one total
 * per status. The counts are totals plus the deltas not folded yet, read in one statement (one snapshot), so they
 * are exact whether a fold committed just before or not — and cost the same at a thousand rows or ten million.
 */
export type StatusCounts = Record<IntentStatus, number>;

function zeroCounts(): StatusCounts {
  return Object.fromEntries(INTENT_STATUSES.map((s) => [s, 0])) as StatusCounts;
}

/** Past this many unfolded deltas a reader folds them itself (the periodic fold normally keeps far below it). */
const FOLD_ON_READ_AT = 5_000;

type Row = { status: IntentStatus; n: bigint; pending: bigint };

/** The read as a query of its own, for callers that batch it with others in one round trip. */
export function statusCountsQuery(includeReplay = false, client: Tx | Prisma.TransactionClient = db()): Prisma.PrismaPromise<Row[]> {
  return client.$queryRaw<Row[]>`
    WITH d AS (SELECT is_replay, status, n FROM intent_status_deltas)
    SELECT c.status::text AS status, sum(c.n)::bigint AS n, (SELECT count(*) FROM d) AS pending
    FROM (SELECT is_replay, status, n FROM intent_status_totals UNION ALL SELECT is_replay, status, n FROM d) c
    WHERE ${includeReplay} OR NOT c.is_replay
    GROUP BY c.status`;
}

export function countsFromRows(rows: Row[]): StatusCounts {
  const counts = zeroCounts();
  for (const r of rows) counts[r.status] = Number(r.n);
  if (rows.length && Number(rows[0].pending) > FOLD_ON_READ_AT) void foldStatusDeltas().catch(() => undefined);
  return counts;
}

/** Exact per-status counts (replay intents left out unless asked for). */
export async function maintainedStatusCounts(options: { includeReplay?: boolean; client?: Tx | Prisma.TransactionClient } = {}): Promise<StatusCounts> {
  return countsFromRows(await statusCountsQuery(options.includeReplay ?? false, options.client));
}

/** Folds the pending deltas into the totals; returns how many delta rows it folded (0 when another fold is running). */
export async function foldStatusDeltas(): Promise<number> {
  const [row] = await db().$queryRaw<{ folded: bigint }[]>`SELECT bridge_fold_status_deltas() AS folded`;
  return Number(row.folded);
}

const FOLD_EVERY_MS = 2_000;
const state = globalThis as unknown as { bridgeStatusFold?: NodeJS.Timeout };

/**
 * Each console instance folds every couple of seconds (several instances are safe: one fold at a time, the others
 * return at once). Between folds the deltas of a busy system are a few thousand rows, summed in a millisecond.
 */
export function startStatusFolding(): void {
  if (state.bridgeStatusFold) return;
  let warned = false;
  state.bridgeStatusFold = setInterval(() => {
    foldStatusDeltas().then(
      () => (warned = false),
      (err: unknown) => {
        if (!warned) console.warn(`[counts] folding status deltas failed (counts stay exact; will retry): ${oneLineError(err)}`);
        warned = true;
      },
    );
  }, FOLD_EVERY_MS);
  state.bridgeStatusFold.unref();
}
