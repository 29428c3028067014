import { z } from 'zod';
import { storable, STORABLE_MESSAGE } from '@/lib/shared/text';
import { recordAuditEvent } from '@/lib/audit/record';
import { requirePermission } from '@/lib/auth/errors';
import type { AuthActor } from '@/lib/auth/types';
import { db, type Tx } from '@/lib/db/client';
import { NotFoundError } from '@/lib/shared/errors';
import { parseInput } from '@/lib/shared/validation';
import { ReplayNotFinishedError } from './errors';

/**
 * The pinned baseline: the run a release engineer chose for later runs to be compared with (the figures a release
 * was accepted with), instead of whichever run finished last. One at a time: pinning another run moves the pin.
 * Pinning and unpinning are commands like starting a run: `replay.run`, audited, one transaction each.
 */

export type PinnedBaseline = { runId: string; pinnedAt: string; pinnedBy: string; note: string | null };
export type BaselineChange = { baseline: PinnedBaseline | null; changed: boolean };

/** `POST /api/replay/runs/{id}/baseline` and the Replay page's pin button: `id` comes from the path. */
export const baselineInputSchema = z.strictObject({
  id: z.uuid({ error: 'must be a run id (a UUID)' }),
  pinned: z.boolean({ error: 'must be true (pin this run as the baseline) or false (unpin it)' }),
  note: z.string({ error: 'must be text' }).trim().max(200, { error: 'must be at most 200 characters' }).refine(storable, { error: STORABLE_MESSAGE }).optional(),
});
export type BaselineInput = z.input<typeof baselineInputSchema>;

/** Pins or unpins a run as the baseline for the person at the door: needs `replay.run`, like starting a run. */
export async function setBaselineForUser(actor: AuthActor, input: unknown): Promise<BaselineChange> {
  requirePermission(actor, 'replay.run');
  const { id, pinned, note } = parseInput(baselineInputSchema, input);
  return pinned ? pinBaseline(id, actor.name, note || null) : unpinBaseline(id, actor.name);
}

type PinRow = { runId: string; pinnedAt: Date; pinnedBy: string; note: string | null };
const toBaseline = (r: PinRow): PinnedBaseline => ({ runId: r.runId, pinnedAt: r.pinnedAt.toISOString(), pinnedBy: r.pinnedBy, note: r.note });

/** Pinning serialises on one advisory lock: two people pinning at once each see the other's pin, never two pins. */
async function lockBaseline(tx: Tx) {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended('bridge:replay:baseline', 0))`;
}

async function runForPin(tx: Tx, id: string): Promise<{ status: string; pinned: boolean }> {
  const rows = await tx.$queryRaw<{ status: string; pinned: boolean }[]>`
    SELECT status, pinned_at IS NOT NULL AS pinned FROM replay_runs WHERE id = ${id}::uuid FOR UPDATE`;
  if (!rows[0]) throw new NotFoundError(`Replay run ${id}`, { runId: id });
  return rows[0];
}

export async function pinBaseline(id: string, actor: string, note: string | null = null): Promise<BaselineChange> {
  return db().$transaction(async (tx) => {
    await lockBaseline(tx);
    const run = await runForPin(tx, id);
    if (run.status !== 'finished') {
      throw new ReplayNotFinishedError(`Replay run ${id} is ${run.status}: only a run that finished can be the baseline later runs are compared with.`, { runId: id, status: run.status });
    }
    if (run.pinned) return { baseline: await pinnedBaseline(tx), changed: false };
    const moved = await tx.$queryRaw<{ id: string }[]>`
      UPDATE replay_runs SET pinned_at = NULL, pinned_by = NULL, pin_note = NULL WHERE pinned_at IS NOT NULL RETURNING id::text AS id`;
    const [row] = await tx.$queryRaw<PinRow[]>`
      UPDATE replay_runs SET pinned_at = now(), pinned_by = ${actor.slice(0, 255)}, pin_note = ${note}
      WHERE id = ${id}::uuid
      RETURNING id::text AS "runId", pinned_at AS "pinnedAt", pinned_by AS "pinnedBy", pin_note AS note`;
    await recordAuditEvent({ action: 'replay_baseline_pinned', actor, details: { runId: id, replaces: moved[0]?.id ?? null, ...(note ? { reason: note } : {}) } }, tx);
    return { baseline: toBaseline(row), changed: true };
  });
}

export async function unpinBaseline(id: string, actor: string): Promise<BaselineChange> {
  return db().$transaction(async (tx) => {
    await lockBaseline(tx);
    const run = await runForPin(tx, id);
    // Unpinning a run that is not the baseline changes nothing: the baseline (if another run is pinned) stays.
    if (!run.pinned) return { baseline: await pinnedBaseline(tx), changed: false };
    await tx.$executeRaw`UPDATE replay_runs SET pinned_at = NULL, pinned_by = NULL, pin_note = NULL WHERE id = ${id}::uuid`;
    await recordAuditEvent({ action: 'replay_baseline_unpinned', actor, details: { runId: id } }, tx);
    return { baseline: null, changed: true };
  });
}

/** The pinned baseline, if a run is pinned. */
export async function pinnedBaseline(client: Tx | ReturnType<typeof db> = db()): Promise<PinnedBaseline | null> {
  const rows = await client.$queryRaw<PinRow[]>`
    SELECT id::text AS "runId", pinned_at AS "pinnedAt", pinned_by AS "pinnedBy", pin_note AS note FROM replay_runs WHERE pinned_at IS NOT NULL LIMIT 1`;
  return rows[0] ? toBaseline(rows[0]) : null;
}
