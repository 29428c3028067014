import type { Tx } from '@/lib/db/client';
import { SAMPLER_LOCK } from '../queries';
import { EPISODE_DURATION_BOUNDS_MS, treeShape, type EpisodeLock, type EpisodeTree, type EpisodeUpdate, type OpenEpisode, type openEpisode } from './fold';

/**
 * The sampler's statements: what it reads besides the Locks page's snapshot, and what it writes. One query per
 * function, named for what it does. Every one runs on the sampler's own connection, under its short timeouts.
 */

/** The locks the backends of the blocking graph wait for, and the root blockers' own (their transaction's, and the tables they hold). */
export async function readEpisodeLocks(tx: Tx, rootPids: number[], waiterPids: number[]): Promise<(EpisodeLock & { pid: number })[]> {
  return tx.$queryRaw<(EpisodeLock & { pid: number })[]>`
    SELECT DISTINCT l.pid, l.locktype AS "lockType", l.mode, l.granted,
           CASE WHEN l.relation IS NOT NULL THEN l.relation::regclass::text END AS relation
    FROM pg_locks l
    WHERE ((l.pid = ANY(${waiterPids}::int[]) AND NOT l.granted)
        OR (l.pid = ANY(${rootPids}::int[]) AND l.granted AND l.locktype IN ('transactionid', 'tuple', 'advisory', 'relation', 'object')))
      AND NOT (l.locktype = 'advisory' AND l.objsubid = 2 AND l.classid::bigint = bridge_actor_space())
      AND NOT (l.locktype = 'relation' AND l.granted AND l.mode = 'AccessShareLock')
      -- A statement takes the same lock on each index of a table it locks: the table's lock says it once.
      AND NOT (l.locktype = 'relation' AND l.granted AND EXISTS (SELECT 1 FROM pg_index i WHERE i.indexrelid = l.relation))
    LIMIT 500`;
}

/**
 * Whether this transaction runs on the connection that took the leadership (same pid, same backend start): a pool
 * that lost the connection opens a new one, which holds no advisory lock, and must not write as the leader.
 */
export async function stillLeader(tx: Tx, leader: { pid: number; backendStart: string }): Promise<boolean> {
  const rows = await tx.$queryRaw<{ ok: boolean }[]>`
    SELECT pg_backend_pid() = ${leader.pid}::int
           AND (SELECT date_trunc('milliseconds', backend_start) FROM pg_stat_activity WHERE pid = pg_backend_pid()) = ${leader.backendStart}::timestamptz AS ok`;
  return rows[0]?.ok === true;
}

/** Takes the sampler's leadership if it is free (never waits), and names the connection that holds it. */
export async function tryLeadership(tx: Tx): Promise<{ pid: number; backendStart: string } | null> {
  const rows = await tx.$queryRaw<{ locked: boolean; pid: number; backendStart: Date }[]>`
    SELECT pg_try_advisory_lock(${SAMPLER_LOCK.space}::int, ${SAMPLER_LOCK.key}::int) AS locked, pg_backend_pid() AS pid,
           (SELECT date_trunc('milliseconds', backend_start) FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS "backendStart"`;
  const row = rows[0];
  return row?.locked ? { pid: row.pid, backendStart: row.backendStart.toISOString() } : null;
}

/** The idle beat: how many backends of this database wait for a lock. No pg_locks, no pg_blocking_pids. */
export async function countLockWaiters(tx: Tx): Promise<number> {
  const rows = await tx.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
  return rows[0]?.n ?? 0;
}

type OpenRow = {
  id: bigint;
  rootPid: number;
  rootBackendStart: Date;
  rootXactStart: Date | null;
  startedAt: Date;
  lastSeenAt: Date;
  peakWaiters: number;
  waiters: OpenEpisode['waiters'];
  locks: EpisodeLock[];
  intentIds: string[];
  applications: string[];
  lastTree: EpisodeTree | null;
};

/** Every episode in progress, with the tree last written for it. */
export async function readOpenEpisodes(tx: Tx): Promise<OpenEpisode[]> {
  const rows = await tx.$queryRaw<OpenRow[]>`
    SELECT e.id, e.root_pid AS "rootPid", e.root_backend_start AS "rootBackendStart", e.root_xact_start AS "rootXactStart",
           e.started_at AS "startedAt", e.last_seen_at AS "lastSeenAt", e.peak_waiters AS "peakWaiters", e.waiters, e.locks,
           e.intent_ids::text[] AS "intentIds", e.applications,
           (SELECT s.tree FROM lock_episode_samples s WHERE s.episode_id = e.id AND s.episode_started_at = e.started_at ORDER BY s.at DESC LIMIT 1) AS "lastTree"
    FROM lock_episodes e WHERE e.ended_at IS NULL`;
  return rows.map((r) => ({
    id: String(r.id),
    key: { pid: r.rootPid, backendStart: r.rootBackendStart.toISOString(), xactStart: r.rootXactStart?.toISOString() ?? null },
    startedAt: r.startedAt.toISOString(),
    lastSeenAt: r.lastSeenAt.toISOString(),
    peakWaiters: r.peakWaiters,
    waiters: r.waiters,
    locks: r.locks,
    intentIds: r.intentIds,
    applications: r.applications,
    lastShape: r.lastTree ? treeShape(r.lastTree) : null,
  }));
}

/**
 * A new episode with its first sample and its intents; null when one is already in progress for that root (the
 * table's trigger then writes no row). The sample and intents carry the episode's start beside its id: the history is
 * partitioned by that start, and their foreign key names both.
 */
export async function insertEpisode(tx: Tx, e: ReturnType<typeof openEpisode>, intents: { id: string; role: string }[]): Promise<string | null> {
  const tree = JSON.stringify(e.tree);
  const rows = await tx.$queryRaw<{ id: bigint }[]>`
    WITH e AS (
      INSERT INTO lock_episodes (root_pid, root_backend_start, root_xact_start, started_at, last_seen_at, peak_waiters, peak_at, peak_tree,
                                 root, waiters, locks, intent_ids, applications)
      VALUES (${e.key.pid}::int, ${e.key.backendStart}::timestamptz, ${e.key.xactStart}::timestamptz, ${e.startedAt}::timestamptz,
              ${e.lastSeenAt}::timestamptz, ${e.peakWaiters}::int, ${e.peakAt}::timestamptz, ${tree}::jsonb, ${JSON.stringify(e.root)}::jsonb,
              ${JSON.stringify(e.waiters)}::jsonb, ${JSON.stringify(e.locks)}::jsonb, ${e.intentIds}::uuid[], ${e.applications}::text[])
      RETURNING id, started_at
    ), s AS (
      INSERT INTO lock_episode_samples (episode_id, episode_started_at, at, waiters, tree)
      SELECT id, started_at, ${e.lastSeenAt}::timestamptz, ${e.peakWaiters}::int, ${tree}::jsonb FROM e
    ), i AS (
      INSERT INTO lock_episode_intents (intent_id, episode_id, episode_started_at, role)
      SELECT x.id, e.id, e.started_at, x.role FROM e, unnest(${intents.map((i) => i.id)}::uuid[], ${intents.map((i) => i.role)}::text[]) AS x(id, role)
      ON CONFLICT DO NOTHING
    )
    SELECT id FROM e`;
  return rows[0] ? String(rows[0].id) : null;
}

/** One more sample of an episode in progress. */
export async function updateEpisode(tx: Tx, id: string, u: EpisodeUpdate, intents: { id: string; role: string }[]): Promise<void> {
  const peakTree = u.peak ? JSON.stringify(u.peak.tree) : null;
  const sampleTree = u.sample ? JSON.stringify(u.sample.tree) : null;
  await tx.$executeRaw`
    WITH e AS (
      UPDATE lock_episodes SET
        last_seen_at = ${u.lastSeenAt}::timestamptz,
        samples = samples + 1,
        peak_waiters = coalesce(${u.peak?.waiters ?? null}::int, peak_waiters),
        peak_at = coalesce(${u.peak?.at ?? null}::timestamptz, peak_at),
        peak_tree = coalesce(${peakTree}::jsonb, peak_tree),
        root = ${JSON.stringify(u.root)}::jsonb,
        waiters = ${JSON.stringify(u.waiters)}::jsonb,
        locks = ${JSON.stringify(u.locks)}::jsonb,
        intent_ids = ${u.intentIds}::uuid[],
        applications = ${u.applications}::text[]
      WHERE id = ${id}::bigint AND ended_at IS NULL
      RETURNING id, started_at
    ), s AS (
      INSERT INTO lock_episode_samples (episode_id, episode_started_at, at, waiters, tree)
      SELECT id, started_at, ${u.lastSeenAt}::timestamptz, ${u.sample?.waiters ?? 0}::int, ${sampleTree}::jsonb FROM e WHERE ${sampleTree}::jsonb IS NOT NULL
      ON CONFLICT DO NOTHING
    )
    INSERT INTO lock_episode_intents (intent_id, episode_id, episode_started_at, role)
    SELECT x.id, e.id, e.started_at, x.role FROM e, unnest(${intents.map((i) => i.id)}::uuid[], ${intents.map((i) => i.role)}::text[]) AS x(id, role)
    ON CONFLICT DO NOTHING`;
}

/** Ends episodes and counts them, by duration, in the totals /api/metrics exports. */
export async function closeEpisodes(tx: Tx, ends: { id: string; endedAt: string }[]): Promise<void> {
  if (!ends.length) return;
  await tx.$executeRaw`
    WITH closed AS (
      UPDATE lock_episodes e SET ended_at = greatest(c.ended_at, e.started_at)
      FROM unnest(${ends.map((e) => e.id)}::bigint[], ${ends.map((e) => e.endedAt)}::timestamptz[]) AS c(id, ended_at)
      WHERE e.id = c.id AND e.ended_at IS NULL
      RETURNING extract(epoch FROM e.ended_at - e.started_at) * 1000 AS ms
    )
    INSERT INTO lock_episode_totals AS t (le_ms, count, sum_ms)
    SELECT coalesce((SELECT min(b) FROM unnest(${[...EPISODE_DURATION_BOUNDS_MS]}::int[]) AS b WHERE b >= closed.ms), -1), count(*), sum(closed.ms)
    FROM closed GROUP BY 1
    ON CONFLICT (le_ms) DO UPDATE SET count = t.count + EXCLUDED.count, sum_ms = t.sum_ms + EXCLUDED.sum_ms`;
}

/** Root blockers beyond the per-minute budget: counted in their minute instead of written one by one. */
export async function addToStorm(tx: Tx, minute: string, episodes: number, peakWaiters: number, applications: string[]): Promise<void> {
  await tx.$executeRaw`
    WITH s AS (
      INSERT INTO lock_episode_storms AS s (minute, episodes, peak_waiters, applications)
      VALUES (${minute}::timestamptz, ${episodes}::int, ${peakWaiters}::int, ${applications.slice(0, 20)}::text[])
      ON CONFLICT (minute) DO UPDATE SET episodes = s.episodes + EXCLUDED.episodes, peak_waiters = greatest(s.peak_waiters, EXCLUDED.peak_waiters),
        applications = (SELECT coalesce(array_agg(DISTINCT a), '{}') FROM (SELECT unnest(s.applications || EXCLUDED.applications) AS a LIMIT 20) x)
    )
    INSERT INTO lock_episode_totals AS t (le_ms, count, sum_ms) VALUES (-2, ${episodes}::int, 0)
    ON CONFLICT (le_ms) DO UPDATE SET count = t.count + EXCLUDED.count`;
}
