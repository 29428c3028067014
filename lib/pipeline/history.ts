import { db } from '@/lib/db/client';
import { NotFoundError } from '@/lib/shared/errors';
import { intentIdSchema } from '@/lib/shared/fields';
import type { IntentStatus } from '@/lib/shared/intent-states';
import { parseInput } from '@/lib/shared/validation';
import { selectRuns } from './repository';
import { selectIntentWaits } from './waits';
import type { WaitView } from './waits';
import type { FailureMark, PipelineHistory, PipelineHistoryRun, PipelineRunRecord } from './types';

/**
 * The wait a run stopped at: its waiting bridge's wait in the run's round that was open when the run ended — the
 * newest one opened by then (an intent waits for one thing at a time). A run may have opened it, or found it open.
 */
function waitOf(run: PipelineRunRecord, waits: readonly WaitView[]): WaitView | undefined {
  if (run.status !== 'waiting') return undefined;
  const bridge = run.steps.find((s) => s.status === 'waiting')?.bridge;
  const ended = Date.parse(run.finishedAt ?? run.startedAt);
  return waits
    .filter((w) => w.round === run.round && w.bridge === bridge && Date.parse(w.createdAt) <= ended)
    .reduce<WaitView | undefined>((newest, w) => (newest && Date.parse(newest.createdAt) >= Date.parse(w.createdAt) ? newest : w), undefined);
}

function withWaits(runs: readonly PipelineRunRecord[], waits: readonly WaitView[]): PipelineHistoryRun[] {
  return runs.map((run) => {
    const wait = waitOf(run, waits);
    return wait ? { ...run, wait } : run;
  });
}

/**
 * Why an intent is where it is, for the intent page and GET /api/intents/:id/pipeline: its latest runs (each an
 * attempt, with every step's error) and, while it is FAILED, the status change that failed it — who, when, from
 * where and the reason recorded with it (a pipeline's FAILFAST mark names the bridge and its error; an operator's
 * says what the operator wrote) — and what its bridges waited for or wait for now, each run that stopped at a wait
 * with that wait as it is now. One snapshot, so they agree.
 */
export async function pipelineHistory(idInput: string, limit = 20): Promise<PipelineHistory> {
  const id = parseInput(intentIdSchema, idInput, 'id').toLowerCase();
  return db().$transaction(
    async (tx) => {
      const [intent] = await tx.$queryRaw<{ status: IntentStatus }[]>`SELECT status::text AS status FROM intents WHERE id = ${id}::uuid`;
      if (!intent) throw new NotFoundError(`Intent ${id}`, { id });
      const waits = await selectIntentWaits(tx, id);
      const runs = withWaits(await selectRuns(tx, id, limit), waits);
      if (intent.status !== 'FAILED') return { runs, failure: null, waits };
      // The latest move into FAILED (a repeat that found it FAILED already moved nothing and is not it).
      const [mark] = await tx.$queryRaw<{ at: Date; actor: string; from: IntentStatus | null; version: number | null; reason: string | null }[]>`
        SELECT at, actor, from_status::text AS "from", version_after AS version,
               CASE WHEN jsonb_typeof(details) = 'object' THEN details ->> 'reason' END AS reason
        FROM audit_events
        WHERE intent_id = ${id}::uuid AND to_status = 'FAILED' AND from_status IS DISTINCT FROM to_status
          AND action IN ('status_change', 'bulk_status_change')
        ORDER BY id DESC
        LIMIT 1`;
      const failure: FailureMark | null = mark ? { ...mark, at: mark.at.toISOString() } : null;
      return { runs, failure, waits };
    },
    { isolationLevel: 'RepeatableRead' },
  );
}
