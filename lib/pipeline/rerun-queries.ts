import { Prisma } from '@/generated/prisma/client';
import type { Tx } from '@/lib/db/client';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { JsonObject, JsonValue } from '@/lib/shared/json';
import type { RunStatus, StepStatus } from './types';

/** The reads a rerun's plan is made from: one statement each, named for what it returns. */

export type RerunBase = {
  status: IntentStatus;
  version: number;
  payload: JsonObject;
  isReplay: boolean;
  /** The intent's row in the work queue: null when it never entered it. */
  workState: string | null;
  workRound: number | null;
  /** The worker holding the intent's claim, when its work row is running. */
  claimedBy: string | null;
  latestRun: { id: string; round: number; status: RunStatus; startedAt: Date } | null;
  /** The latest run's steps in order (a bridge appears once per run). */
  steps: { bridge: string; status: StepStatus; result: JsonValue | null }[];
  /** The status the chosen bridge last started at in the latest run's round (its `bridge_started` audit event). */
  fromStatus: IntentStatus | null;
};

/**
 * The intent, its work row, its latest run with that run's steps, and where the chosen bridge started in that run's
 * round: everything a rerun's plan needs, in one snapshot. Undefined when the intent does not exist.
 */
export async function selectRerunBase(client: Tx, intentId: string, fromBridge: string): Promise<RerunBase | undefined> {
  const rows = await client.$queryRaw<(Omit<RerunBase, 'steps'> & { steps: RerunBase['steps'] | null })[]>`
    WITH latest AS (
      SELECT r.id, r.round, r.status, r.started_at FROM pipeline_runs r
      WHERE r.intent_id = ${intentId}::uuid AND r.status <> 'released' ORDER BY r.started_at DESC, r.id LIMIT 1
    )
    SELECT i.status::text AS status, i.version, i.payload, i.is_replay AS "isReplay", w.state AS "workState", w.round AS "workRound", CASE WHEN w.state = 'running' THEN coalesce(w.claimed_by, 'a worker') END AS "claimedBy",
           (SELECT jsonb_build_object('id', l.id::text, 'round', l.round, 'status', l.status, 'startedAt', l.started_at) FROM latest l) AS "latestRun",
           (SELECT jsonb_agg(jsonb_build_object('bridge', s.bridge, 'status', s.status, 'result', s.result) ORDER BY s.position, s.id)
              FROM pipeline_steps s WHERE s.run_id = (SELECT id FROM latest)) AS steps,
           (SELECT a.details->>'status' FROM audit_events a
              JOIN pipeline_runs r ON r.id::text = a.details->>'runId' AND r.intent_id = a.intent_id
             WHERE a.intent_id = ${intentId}::uuid AND a.action = 'bridge_started' AND a.details->>'bridge' = ${fromBridge}
               AND r.round = (SELECT round FROM latest)
             ORDER BY a.id DESC LIMIT 1) AS "fromStatus"
    FROM intents i LEFT JOIN intent_work w ON w.intent_id = i.id
    WHERE i.id = ${intentId}::uuid`;
  const row = rows[0];
  if (!row) return undefined;
  const latest = row.latestRun as unknown as { id: string; round: number; status: RunStatus; startedAt: string } | null;
  return {
    ...row,
    latestRun: latest ? { ...latest, startedAt: new Date(latest.startedAt) } : null,
    steps: row.steps ?? [],
  };
}

/**
 * The pipeline's failures, written once for the Workers page's count, its list and the rerun of all failed: a work
 * row (`alias`) the workers ended as failed, with their last attempt's error. An intent failed by another door, or by
 * an operator's own run of the pipeline, has no such error on its row: its intent page says why, and it is not
 * counted here, so the count, the list and the rerun's plan always agree.
 */
export const pipelineFailure = (alias: string) => Prisma.raw(`${alias}.state = 'failed' AND ${alias}.last_error IS NOT NULL`);

/** Of the Workers page's failed list (intents the workers failed, still FAILED), the ids whose last error contains `text`. */
export async function selectFailedIntentIds(client: Tx, errorContains: string | null, limit: number): Promise<string[]> {
  const rows = await client.$queryRaw<{ id: string }[]>`
    SELECT w.intent_id::text AS id
    FROM intent_work w JOIN intents i ON i.id = w.intent_id
    WHERE ${pipelineFailure('w')} AND i.status = 'FAILED'
      AND (${errorContains}::text IS NULL OR strpos(lower(w.last_error), lower(${errorContains}::text)) > 0)
    ORDER BY w.finished_at DESC NULLS LAST, w.intent_id
    LIMIT ${limit}`;
  return rows.map((r) => r.id);
}
