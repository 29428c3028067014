import { hostname } from 'node:os';
import { z } from 'zod';
import { Prisma } from '@/generated/prisma/client';
import { requirePermission } from '@/lib/auth/errors';
import type { AuthActor } from '@/lib/auth/types';
import { reasonProblem, normaliseReason } from '@/lib/console/reasons';
import { db, planWithValues } from '@/lib/db/client';
import { announceCommitted } from '@/lib/live/announce';
import { bulkUpdateStatus } from '@/lib/intents/commands';
import { InvalidTransitionError } from '@/lib/intents/errors';
import { DomainError, NotFoundError, ValidationError } from '@/lib/shared/errors';
import { rangeFiltersSchema, reasonSchema, searchTextSchema, statusSchema } from '@/lib/intents/schemas';
import { parseInput } from '@/lib/shared/validation';
import { canTransition, INTENT_STATUSES, type IntentStatus } from '@/lib/shared/intent-states';
import { baseConditions, checkContention, resolveSearch } from '@/lib/search/intents';

/**
 * Bulk on everything matching a filter (the Intents page's status and search), run on the server: a preview of
 * how many can move, then a batch that moves only those, in chunks of CHUNK intents through the engine's
 * bulkUpdateStatus (each chunk locked in id order, all or nothing), in id order with a cursor. The batch's state is
 * a bulk_batches row: progress, a cancel request and a heartbeat. Every console instance may run or resume batches:
 * one whose runner stopped heartbeating for ABANDONED_AFTER_MS is taken over (by a conditional UPDATE, so by one
 * instance only) and continues after its cursor — chunks already committed are not redone, since their intents no
 * longer match the statuses that can move. Audited as one batch: a `bulk_batch` audit row when it starts and when
 * it ends, and the batch id in each change's audit details.
 */
export const CHUNK = 100;
export const ABANDONED_AFTER_MS = 15_000;
const RUNNER = `${hostname()}:${process.pid}`;

export const batchFilterSchema = z.strictObject({
  status: statusSchema.optional(),
  q: searchTextSchema.optional(),
  ...rangeFiltersSchema.shape,
});
export type BatchFilter = z.infer<typeof batchFilterSchema>;

export const previewSchema = z.strictObject({ filter: batchFilterSchema, to: statusSchema });
export const startSchema = z.strictObject({
  filter: batchFilterSchema,
  to: statusSchema,
  // The same reason as a single status change: trimmed, at most 500 characters, storable text.
  reason: reasonSchema.optional(),
});

export type BatchPreview = {
  to: IntentStatus;
  matching: number;
  /** Will move: their status allows the move. */
  movable: number;
  /** Already in the target status: left as they are. */
  already: number;
  /** Cannot move there from their status: left as they are. */
  blocked: number;
  byStatus: Record<IntentStatus, number>;
};

export type BatchView = {
  id: string;
  status: 'running' | 'finished' | 'cancelled' | 'failed';
  to: IntentStatus;
  filter: BatchFilter;
  reason: string | null;
  requestedBy: string;
  planned: number;
  moved: number;
  skipped: number;
  cancelRequested: boolean;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
};

export class NothingToMoveError extends DomainError {
  readonly code = 'nothing_to_move';
  readonly httpStatus = 409;
}

const allowedFrom = (to: IntentStatus) => INTENT_STATUSES.filter((s) => s !== to && canTransition(s, to));

/** The Intents list's own filter (its search included), so "everything matching" is what the list shows. */
async function whereOf(filter: BatchFilter): Promise<Prisma.Sql[]> {
  const q = filter.q || null;
  const { status: _status, q: _q, ...rest } = filter;
  checkContention(rest);
  const where = baseConditions({ ...rest, q, includeReplay: false }, await resolveSearch(q, false));
  if (filter.status) where.push(Prisma.sql`status = ${filter.status}::"IntentStatus"`);
  return where;
}

/** How many intents match the filter, and how many of them can move to `to`: the counts the dialog shows. */
export async function previewBatch(input: unknown): Promise<BatchPreview> {
  const { filter, to } = parseInput(previewSchema, input);
  const where = await whereOf(filter);
  // Exact, not estimated like the list's counts: the dialog promises what the batch will do. Planned with its values
  // like every filtered read of the list, so a skewed filter never meets a generic plan.
  const rows = await db().$queryRaw<{ status: IntentStatus; n: bigint }[]>`${planWithValues}
    SELECT status::text AS status, count(*) AS n FROM intents
    ${where.length ? Prisma.sql`WHERE ${Prisma.join(where, ' AND ')}` : Prisma.empty}
    GROUP BY status`;
  const byStatus = Object.fromEntries(INTENT_STATUSES.map((s) => [s, 0])) as Record<IntentStatus, number>;
  for (const r of rows) byStatus[r.status] = Number(r.n);
  const movable = allowedFrom(to).reduce((n, s) => n + byStatus[s], 0);
  const already = byStatus[to];
  const matching = Object.values(byStatus).reduce((a, b) => a + b, 0);
  return { to, matching, movable, already, blocked: matching - movable - already, byStatus };
}

type BatchRow = {
  id: string; status: BatchView['status']; toStatus: IntentStatus; filter: BatchFilter; reason: string | null; requestedBy: string; planned: number;
  moved: number; skipped: number; cursor: string | null; cancelRequested: boolean; error: string | null; createdAt: Date; finishedAt: Date | null;
};

function toView(r: BatchRow): BatchView {
  return {
    id: r.id, status: r.status, to: r.toStatus, filter: r.filter, reason: r.reason, requestedBy: r.requestedBy, planned: r.planned, moved: r.moved,
    skipped: r.skipped, cancelRequested: r.cancelRequested, error: r.error, createdAt: r.createdAt.toISOString(), finishedAt: r.finishedAt?.toISOString() ?? null,
  };
}

const COLUMNS = Prisma.sql`id::text, status, to_status::text AS "toStatus", filter, reason, requested_by AS "requestedBy", planned, moved, skipped,
  cursor::text, cancel_requested AS "cancelRequested", error, created_at AS "createdAt", finished_at AS "finishedAt"`;

/** Starts a batch (the row and its `started` audit entry in one statement) and runs it in the background. */
export async function startBatch(actor: AuthActor, input: unknown, options: { run?: boolean } = {}): Promise<BatchView> {
  requirePermission(actor, 'intents.bulk');
  const { filter, to, reason: rawReason } = parseInput(startSchema, input);
  const problem = reasonProblem(to, rawReason);
  if (problem) throw new ValidationError([{ field: 'reason', message: problem }]);
  const reason = normaliseReason(rawReason) ?? null;
  const preview = await previewBatch({ filter, to });
  if (preview.movable === 0) throw new NothingToMoveError(`None of the ${preview.matching} matching intents can move to ${to}.`, { preview });
  const [row] = await db().$queryRaw<BatchRow[]>`
    WITH b AS (
      INSERT INTO bulk_batches (status, to_status, filter, reason, requested_by, planned, runner)
      VALUES ('running', ${to}::"IntentStatus", ${JSON.stringify(filter)}::jsonb, ${reason}, ${actor.name}, ${preview.movable}, ${RUNNER})
      RETURNING *
    ), a AS (
      INSERT INTO audit_events (action, actor, to_status, details)
      SELECT 'bulk_batch', b.requested_by, b.to_status,
             jsonb_build_object('batchId', b.id, 'phase', 'started', 'toStatus', b.to_status, 'filter', b.filter, 'planned', b.planned,
                                'matching', ${preview.matching}::int, 'reason', b.reason)
      FROM b
    )
    SELECT ${COLUMNS} FROM b`;
  announceCommitted();
  if (options.run !== false) void runBatch(row.id);
  return toView(row);
}

export async function getBatch(id: string): Promise<BatchView> {
  if (!z.uuid().safeParse(id).success) throw new ValidationError([{ field: 'id', message: 'must be a batch id (a UUID)' }]);
  // Whoever looks at a batch whose runner has gone quiet takes it over: a restart never leaves it stuck.
  void resumeAbandonedBatches();
  const rows = await db().$queryRaw<BatchRow[]>`SELECT ${COLUMNS} FROM bulk_batches WHERE id = ${id}::uuid`;
  if (!rows[0]) throw new NotFoundError(`Batch ${id}`, { id });
  return toView(rows[0]);
}

/** Asks a running batch to stop after its current chunk; what moved stays moved. */
export async function cancelBatch(actor: AuthActor, id: string): Promise<BatchView> {
  requirePermission(actor, 'intents.bulk');
  if (!z.uuid().safeParse(id).success) throw new ValidationError([{ field: 'id', message: 'must be a batch id (a UUID)' }]);
  await db().$executeRaw`
    UPDATE bulk_batches SET cancel_requested = true, cancelled_by = ${actor.name} WHERE id = ${id}::uuid AND status = 'running' AND NOT cancel_requested`;
  return getBatch(id);
}

/** Takes over batches whose runner stopped heartbeating, one instance per batch, and runs them on. */
export async function resumeAbandonedBatches(): Promise<string[]> {
  const rows = await db().$queryRaw<{ id: string }[]>`
    UPDATE bulk_batches SET runner = ${RUNNER}, heartbeat_at = now()
    WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => ${ABANDONED_AFTER_MS / 1000}::double precision)
    RETURNING id::text`;
  for (const { id } of rows) void runBatch(id);
  return rows.map((r) => r.id);
}

/** One heartbeat: still ours and running? Then what the next chunk needs. */
async function heartbeat(id: string) {
  const rows = await db().$queryRaw<BatchRow[]>`
    UPDATE bulk_batches SET heartbeat_at = now() WHERE id = ${id}::uuid AND status = 'running' AND runner = ${RUNNER}
    RETURNING ${COLUMNS}`;
  return rows[0];
}

async function finish(id: string, status: 'finished' | 'cancelled' | 'failed', error: string | null = null) {
  await db().$queryRaw`
    WITH b AS (
      UPDATE bulk_batches SET status = ${status}, error = ${error}, finished_at = now(), heartbeat_at = now()
      WHERE id = ${id}::uuid AND status = 'running' AND runner = ${RUNNER}
      RETURNING *
    )
    INSERT INTO audit_events (action, actor, to_status, details)
    SELECT 'bulk_batch', coalesce(b.cancelled_by, b.requested_by), b.to_status,
           jsonb_build_object('batchId', b.id, 'phase', ${status}::text, 'toStatus', b.to_status, 'planned', b.planned, 'moved', b.moved,
                              'skipped', b.skipped, 'reason', b.reason, 'error', b.error, 'requestedBy', b.requested_by)
    FROM b
    RETURNING id`;
  announceCommitted();
}

/** Moves one chunk through the engine; intents that changed meanwhile and can no longer move are left out and counted. */
async function moveChunk(batch: BatchRow, ids: string[]): Promise<{ moved: number; skipped: number }> {
  let remaining = ids;
  let skipped = 0;
  for (let attempt = 0; remaining.length > 0 && attempt < 5; attempt++) {
    try {
      const input = { ids: remaining, status: batch.toStatus, ...(batch.reason ? { reason: batch.reason } : {}) };
      const result = await bulkUpdateStatus(input, { name: batch.requestedBy }, { auditDetails: { batchId: batch.id } });
      return { moved: result.intents.length - result.alreadyApplied.length, skipped: skipped + result.alreadyApplied.length };
    } catch (err) {
      const refused =
        err instanceof InvalidTransitionError
          ? ((err.details as { intents?: { intentId: string }[] } | undefined)?.intents ?? []).map((i) => i.intentId)
          : err instanceof NotFoundError
            ? ((err.details as { missing?: string[] } | undefined)?.missing ?? [])
            : null;
      if (!refused || refused.length === 0) throw err;
      const out = new Set(refused);
      skipped += remaining.filter((id) => out.has(id)).length;
      remaining = remaining.filter((id) => !out.has(id));
    }
  }
  return { moved: 0, skipped: skipped + remaining.length };
}

/** Runs a batch to its end (or until it is cancelled, or taken over by another instance). */
export async function runBatch(id: string): Promise<void> {
  try {
    for (;;) {
      const batch = await heartbeat(id);
      if (!batch) return; // finished, or another instance runs it now
      if (batch.cancelRequested) return await finish(id, 'cancelled');
      const where = [
        ...(await whereOf(batch.filter)),
        Prisma.sql`status = ANY(${allowedFrom(batch.toStatus)}::"IntentStatus"[])`,
        ...(batch.cursor ? [Prisma.sql`id > ${batch.cursor}::uuid`] : []),
      ];
      const chunk = await db().$queryRaw<{ id: string }[]>`${planWithValues}
        SELECT id::text FROM intents WHERE ${Prisma.join(where, ' AND ')} ORDER BY id LIMIT ${CHUNK}`;
      if (chunk.length === 0) return await finish(id, 'finished');
      const ids = chunk.map((r) => r.id);
      const { moved, skipped } = await moveChunk(batch, ids);
      await db().$executeRaw`
        UPDATE bulk_batches SET moved = moved + ${moved}, skipped = skipped + ${skipped}, cursor = ${ids[ids.length - 1]}::uuid, heartbeat_at = now()
        WHERE id = ${id}::uuid AND runner = ${RUNNER} AND status = 'running'`;
    }
  } catch (err) {
    const message = err instanceof DomainError ? err.message : 'The batch stopped on an unexpected error; what moved stays moved.';
    if (!(err instanceof DomainError)) console.error(`[bulk] batch ${id} failed:`, err);
    await finish(id, 'failed', message).catch(() => undefined);
  }
}

export { RUNNER as BULK_RUNNER };
