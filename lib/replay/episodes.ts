import { db } from '@/lib/db/client';
import type { ReplayRunView } from './types';

/**
 * The lock episodes a replay run caused, read from the lock history (lib/locks/history). The link is the run's own
 * intents: every scenario works only on intents it created, each tagged with the run's id
 * (`payload.replay.run`), and the sampler ties every episode to the intents its root and waiters held or waited on.
 * Neither of the other candidates is enough on its own: the run's time window also holds whatever else the database
 * did meanwhile, and application names are per operation and intent (`bridge:<operation>:<intent>`) or per process
 * (`bridge:baseline`), never per run. So: episodes begun while the run ran (the window keeps the read to an index
 * range) that involve at least one of its intents.
 */

export type RunLockEpisode = {
  id: string;
  startedAt: string;
  endedAt: string | null;
  durationMs: number;
  peakWaiters: number;
  /** Waits seen over the episode (a wait that ran out and came back counts twice). */
  waitersSeen: number;
  rootPid: number;
  rootApplication: string | null;
  /** The engine operation the root blocker ran (from its label), when it was the engine's. */
  rootOperation: string | null;
  /** The run's intents the episode involved (at most 10). */
  intentIds: string[];
};

export type RunLockEpisodes = {
  items: RunLockEpisode[];
  /** All the run's episodes, `items` being the first RUN_EPISODES_SHOWN of them by start. */
  total: number;
  /**
   * Minutes of the run in which the sampler summarised a storm of new blockings instead of recording each: those are
   * tied to no intent, so they may include other traffic; said so that a run's count is not mistaken for complete.
   */
  stormMinutes: { minute: string; episodes: number }[];
};

const RUN_EPISODES_SHOWN = 50;

type Row = Omit<RunLockEpisode, 'id' | 'startedAt' | 'endedAt'> & { id: bigint; startedAt: Date; endedAt: Date | null; total: number };

export async function lockEpisodesOfRun(run: Pick<ReplayRunView, 'id' | 'createdAt' | 'finishedAt'>): Promise<RunLockEpisodes> {
  const rows = await db().$queryRaw<Row[]>`
    WITH mine AS (
      SELECT e.*, ARRAY(
               SELECT DISTINCT li.intent_id::text FROM lock_episode_intents li JOIN intents i ON i.id = li.intent_id
               WHERE li.episode_id = e.id AND li.episode_started_at = e.started_at AND i.is_replay AND i.payload->'replay'->>'run' = ${run.id}
               ORDER BY 1 LIMIT 10) AS run_intents
      FROM lock_episodes e
      WHERE e.started_at >= ${run.createdAt}::timestamptz AND e.started_at <= coalesce(${run.finishedAt}::timestamptz, now())
    )
    SELECT id, started_at AS "startedAt", ended_at AS "endedAt", peak_waiters AS "peakWaiters",
           round(extract(epoch FROM coalesce(ended_at, last_seen_at) - started_at) * 1000)::int AS "durationMs",
           jsonb_array_length(waiters) AS "waitersSeen", root_pid AS "rootPid", root->>'applicationName' AS "rootApplication",
           root->>'operation' AS "rootOperation", run_intents AS "intentIds", (count(*) OVER ())::int AS total
    FROM mine WHERE cardinality(run_intents) > 0
    ORDER BY started_at, id
    LIMIT ${RUN_EPISODES_SHOWN}`;
  const storms = await db().$queryRaw<{ minute: Date; episodes: number }[]>`
    SELECT minute, episodes FROM lock_episode_storms
    WHERE minute >= date_trunc('minute', ${run.createdAt}::timestamptz) AND minute <= coalesce(${run.finishedAt}::timestamptz, now())
    ORDER BY minute LIMIT 100`;
  return {
    items: rows.map(({ total: _total, ...r }) => ({ ...r, id: String(r.id), startedAt: r.startedAt.toISOString(), endedAt: r.endedAt?.toISOString() ?? null })),
    total: rows[0]?.total ?? 0,
    stormMinutes: storms.map((s) => ({ minute: s.minute.toISOString(), episodes: s.episodes })),
  };
}
