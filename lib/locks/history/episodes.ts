import { z } from 'zod';
import { Prisma } from '@/generated/prisma/client';
import { timeSchema } from '@/lib/audit/log';
import { db, type Db, type Tx } from '@/lib/db/client';
import { ValidationError } from '@/lib/shared/errors';
import { parseInput } from '@/lib/shared/validation';
import type { UnblockImpact } from '../types';
import type { EpisodeBackend, EpisodeLock, EpisodeTree, EpisodeWaiter } from './fold';
import { intentRefSchema, resolveIntentFilter } from '@/lib/search/ids';

/**
 * Reading the lock history: episodes newest first in keyset pages, one episode with the tree at each sample, and
 * the episodes an intent was part of. Query text is stored whole and masked at the door (lib/locks/mask.ts).
 */

const DIGITS = /^(0|[1-9][0-9]{0,9})$/;

export const episodesQuerySchema = z.strictObject({
  from: timeSchema.optional(),
  to: timeSchema.optional(),
  // The whole id or the first 8 or more characters the console shows: resolved to the one intent they name.
  intentId: intentRefSchema.optional(),
  application: z.string({ error: 'must be a string' }).trim().min(1, { error: 'must not be empty' }).max(63, { error: 'must be at most 63 characters' }).optional(),
  minDurationMs: z
    .string({ error: 'must be a whole number of milliseconds' })
    .regex(DIGITS, { error: 'must be a whole number of milliseconds written in decimal digits' })
    .transform(Number)
    .optional(),
  limit: z
    .string({ error: 'must be a whole number' })
    .regex(DIGITS, { error: 'must be a whole number written in decimal digits' })
    .transform(Number)
    .pipe(z.number().min(1, { error: 'must be at least 1' }).max(200, { error: 'must be at most 200' }))
    .optional(),
  cursor: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/, { error: 'is not a cursor this list issued' }).optional(),
}).refine((q) => !(q.from && q.to && q.to < q.from), { path: ['to'], error: 'must not be before from' });
export type EpisodesQueryInput = z.input<typeof episodesQuerySchema>;

export const episodeIdSchema = z.strictObject({
  id: z.string({ error: 'must be an episode id' }).regex(/^[1-9][0-9]{0,17}$/, { error: 'must be an episode id (a whole number)' }),
});

export type EpisodeLinks = {
  lockTimeouts: { intentId: string; minute: string; operation: string; count: number }[];
  deadlocks: { id: string; at: string; operation: string; intentIds: string[] }[];
  unblocks: { id: string; at: string; action: string; actor: string; pid: number; signalled: boolean | null; intentId: string | null }[];
};

export type Episode = {
  id: string;
  startedAt: string;
  /** Null while it lasts. */
  endedAt: string | null;
  /** To its end, or to the last sample while it lasts. */
  durationMs: number;
  lastSeenAt: string;
  samples: number;
  root: EpisodeBackend;
  waiters: EpisodeWaiter[];
  peakWaiters: number;
  peakAt: string;
  peakTree: EpisodeTree;
  intents: { id: string; role: 'root' | 'waiter' }[];
  locks: EpisodeLock[];
  applications: string[];
  links: EpisodeLinks;
};

export type EpisodeStorm = { minute: string; episodes: number; peakWaiters: number; applications: string[] };
export type EpisodePage = { items: Episode[]; nextCursor: string | null; storms: EpisodeStorm[] };
export type EpisodeSample = { at: string; waiters: number; tree: EpisodeTree };
export type EpisodeWithSamples = Episode & { samples: number; sampleTrees: EpisodeSample[] };

type Row = Omit<Episode, 'startedAt' | 'endedAt' | 'lastSeenAt' | 'peakAt' | 'links' | 'id'> & {
  id: bigint;
  startedAt: Date;
  endedAt: Date | null;
  lastSeenAt: Date;
  peakAt: Date;
  links: EpisodeLinks;
};

/**
 * Margin after an episode's end within which an unblock or a deadlock still counts as inside it: the end is known to
 * a sample, and both often are what ended it (the terminated root, the deadlock detector breaking the wait).
 */
const END_MARGIN = Prisma.sql`interval '3 seconds'`;

/**
 * The lock timeouts of an episode `e`: each one the engine recorded for one of its intents while it lasted, behind
 * its root or one of its waiters (or with no holder named). Counted per refusal, not from the per-minute counters:
 * two blockings of one intent in the same minute would each have been given the other's timeouts too.
 */
const episodeLockTimeouts = Prisma.sql`
  (SELECT t.intent_id, t.at, t.operation FROM intent_engine_events t
    WHERE t.kind = 'lock_timeout' AND t.intent_id = ANY(e.intent_ids)
      AND t.at BETWEEN e.started_at AND coalesce(e.ended_at, now()) + ${END_MARGIN}
      AND (t.holder_pid IS NULL OR t.holder_pid = e.root_pid
           OR t.holder_pid IN (SELECT (w->>'pid')::int FROM jsonb_array_elements(e.waiters) w))) t`;

function selectEpisodes(where: Prisma.Sql, limit: number): Prisma.Sql {
  return Prisma.sql`
    SELECT e.id, e.started_at AS "startedAt", e.ended_at AS "endedAt", e.last_seen_at AS "lastSeenAt", e.samples,
           round(extract(epoch FROM coalesce(e.ended_at, e.last_seen_at) - e.started_at) * 1000)::int AS "durationMs",
           e.root, e.waiters, e.peak_waiters AS "peakWaiters", e.peak_at AS "peakAt", e.peak_tree AS "peakTree", e.locks, e.applications,
           (SELECT coalesce(json_agg(json_build_object('id', i.intent_id, 'role', i.role) ORDER BY i.role DESC, i.intent_id), '[]')
              FROM lock_episode_intents i WHERE i.episode_id = e.id AND i.episode_started_at = e.started_at) AS intents,
           json_build_object(
             'lockTimeouts', (SELECT coalesce(json_agg(json_build_object('intentId', o.intent_id, 'minute', o.minute, 'operation', o.operation, 'count', o.count) ORDER BY o.minute), '[]')
                FROM (SELECT t.intent_id, date_trunc('minute', t.at) AS minute, t.operation, count(*)::int AS count
                        FROM ${episodeLockTimeouts} GROUP BY 1, 2, 3 LIMIT 50) o),
             'deadlocks', (SELECT coalesce(json_agg(json_build_object('id', d.id::text, 'at', d.at, 'operation', d.operation, 'intentIds', d.intent_ids) ORDER BY d.at), '[]')
                FROM (SELECT * FROM deadlock_events d WHERE d.at BETWEEN e.started_at AND coalesce(e.ended_at, now()) + ${END_MARGIN} AND d.intent_ids && e.intent_ids LIMIT 50) d),
             'unblocks', (SELECT coalesce(json_agg(json_build_object('id', a.id::text, 'at', a.at, 'action', a.action, 'actor', a.actor, 'pid', (a.details->>'pid')::int,
                                                   'signalled', (a.details->>'signalled')::boolean, 'intentId', a.intent_id) ORDER BY a.at), '[]')
                FROM (SELECT * FROM audit_events a WHERE a.action IN ('backend_cancel', 'backend_terminate')
                        AND a.at BETWEEN e.started_at AND coalesce(e.ended_at, now()) + ${END_MARGIN}
                        AND a.details->>'pid' IN (SELECT e.root_pid::text UNION SELECT w->>'pid' FROM jsonb_array_elements(e.waiters) w) LIMIT 50) a)
           ) AS links
    FROM lock_episodes e
    WHERE ${where}
    ORDER BY e.started_at DESC, e.id DESC
    LIMIT ${limit}::int`;
}

function toEpisode(r: Row): Episode {
  return {
    ...r,
    id: String(r.id),
    startedAt: r.startedAt.toISOString(),
    endedAt: r.endedAt?.toISOString() ?? null,
    lastSeenAt: r.lastSeenAt.toISOString(),
    peakAt: r.peakAt.toISOString(),
    links: {
      ...r.links,
      lockTimeouts: r.links.lockTimeouts.map((l) => ({ ...l, minute: new Date(l.minute).toISOString(), count: Number(l.count) })),
      deadlocks: r.links.deadlocks.map((d) => ({ ...d, at: new Date(d.at).toISOString() })),
      unblocks: r.links.unblocks.map((u) => ({ ...u, at: new Date(u.at).toISOString() })),
    },
  };
}

const encodeCursor = (e: Episode) => Buffer.from(`${e.startedAt}|${e.id}`).toString('base64url');

function decodeCursor(cursor: string): { at: string; id: string } {
  const [at, id] = Buffer.from(cursor, 'base64url').toString().split('|');
  if (!at || !id || Number.isNaN(new Date(at).getTime()) || !/^[1-9][0-9]{0,17}$/.test(id)) {
    throw new ValidationError([{ field: 'cursor', message: 'is not a cursor this list issued' }]);
  }
  return { at, id };
}

/** `GET /api/locks/episodes`: episodes overlapping [from, to], newest first, filtered; storm minutes in the range. */
export async function listEpisodes(input: unknown): Promise<EpisodePage> {
  const parsed = parseInput(episodesQuerySchema, input);
  const q = parsed.intentId ? { ...parsed, intentId: await resolveIntentFilter(parsed.intentId, 'intentId') } : parsed;
  const limit = q.limit ?? 50;
  const cursor = q.cursor ? decodeCursor(q.cursor) : null;
  const conditions: Prisma.Sql[] = [Prisma.sql`true`];
  if (q.from) conditions.push(Prisma.sql`coalesce(e.ended_at, 'infinity') >= ${q.from}::timestamptz`);
  if (q.to) conditions.push(Prisma.sql`e.started_at <= ${q.to}::timestamptz`);
  if (q.intentId) conditions.push(Prisma.sql`e.id IN (SELECT episode_id FROM lock_episode_intents WHERE intent_id = ${q.intentId}::uuid)`);
  if (q.application) conditions.push(Prisma.sql`EXISTS (SELECT 1 FROM unnest(e.applications) a WHERE left(a, ${q.application.length}::int) = ${q.application})`);
  if (q.minDurationMs !== undefined) conditions.push(Prisma.sql`coalesce(e.ended_at, e.last_seen_at) - e.started_at >= make_interval(secs => ${q.minDurationMs / 1000}::float8)`);
  // The plain `started_at <=` beside the row comparison is what the planner prunes the day partitions on.
  if (cursor) conditions.push(Prisma.sql`e.started_at <= ${cursor.at}::timestamptz AND (e.started_at, e.id) < (${cursor.at}::timestamptz, ${cursor.id}::bigint)`);
  const rows = await db().$queryRaw<Row[]>(selectEpisodes(Prisma.join(conditions, ' AND '), limit + 1));
  const items = rows.slice(0, limit).map(toEpisode);
  const storms = cursor
    ? []
    : await db().$queryRaw<{ minute: Date; episodes: number; peakWaiters: number; applications: string[] }[]>`
        SELECT minute, episodes, peak_waiters AS "peakWaiters", applications FROM lock_episode_storms
        WHERE minute >= coalesce(${q.from ?? null}::timestamptz, '-infinity') AND minute <= coalesce(${q.to ?? null}::timestamptz, 'infinity')
        ORDER BY minute DESC LIMIT 100`;
  return {
    items,
    nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1]) : null,
    storms: storms.map((s) => ({ ...s, minute: s.minute.toISOString() })),
  };
}

/** Samples returned with an episode at most (the first, then evenly spread, and the last are kept). */
const MAX_SAMPLES = 600;

/** `GET /api/locks/episodes/:id`: the episode with the tree at each sample that changed it; null when unknown. */
export async function getEpisode(input: unknown): Promise<EpisodeWithSamples | null> {
  const { id } = parseInput(episodeIdSchema, input);
  const rows = await db().$queryRaw<Row[]>(selectEpisodes(Prisma.sql`e.id = ${id}::bigint`, 1));
  if (!rows[0]) return null;
  const samples = await db().$queryRaw<{ at: Date; waiters: number; tree: EpisodeTree }[]>`
    SELECT at, waiters, tree FROM (
      SELECT s.*, row_number() OVER (ORDER BY at) AS n, count(*) OVER () AS total FROM lock_episode_samples s
      WHERE s.episode_id = ${id}::bigint AND s.episode_started_at = ${rows[0].startedAt}::timestamptz
    ) s
    WHERE total <= ${MAX_SAMPLES}::int OR n = 1 OR n = total OR n % ceil(total::float8 / ${MAX_SAMPLES}::int)::int = 0
    ORDER BY at`;
  const episode = toEpisode(rows[0]);
  return { ...episode, sampleTrees: samples.map((s) => ({ at: s.at.toISOString(), waiters: s.waiters, tree: s.tree })) };
}

/**
 * A backend the sampler recorded (`b`, SQL over its jsonb), named for people: the console's actor and operation
 * (`admin (update_status)`), else its application name (`psql`), else its pid.
 */
const backendLabel = (b: Prisma.Sql) =>
  Prisma.sql`coalesce(${b} ->> 'actor' || coalesce(' (' || (${b} ->> 'operation') || ')', ''), nullif(${b} ->> 'applicationName', ''), 'backend ' || (${b} ->> 'pid'))`;

export type IntentEpisode = {
  id: string;
  startedAt: string;
  endedAt: string | null;
  durationMs: number;
  peakWaiters: number;
  rootPid: number;
  /**
   * The root blocker as the sampler saw it (`backendLabel`), and its state (`idle in transaction`: a session that
   * holds its locks and runs nothing).
   */
  rootLabel: string;
  rootState: string | null;
  /** When the root blocker's transaction began: it may have held the row long before anyone waited for it. */
  rootXactStart: string | null;
  /** Who waited behind it, each once (`backendLabel`). */
  waitedBy: string[];
  /** `root` when the root blocker held the intent (it may have waited on it too); else `waiter`. */
  role: 'root' | 'waiter';
  /** The episode's place in the intent timeline's write order (null: recorded before episodes had one). */
  writeSeq: string | null;
};

/**
 * The episodes an intent was part of, in the order they were first recorded: by the write position the sampler drew
 * (`writeSeq`, the intent timeline's order; null for episodes from before it), then by id. `page` continues after
 * such a pair, at most `limit` of them.
 */
export async function episodesForIntent(
  intentId: string,
  client: Db | Tx = db(),
  page: { after?: { seq: bigint; id: bigint }; limit?: number } = {},
): Promise<IntentEpisode[]> {
  const after = page.after ?? { seq: -1n, id: 0n };
  const rows = await client.$queryRaw<(Omit<IntentEpisode, 'id' | 'startedAt' | 'endedAt' | 'rootXactStart'> & { id: bigint; startedAt: Date; endedAt: Date | null; rootXactStart: Date | null })[]>`
    SELECT e.id, e.started_at AS "startedAt", e.ended_at AS "endedAt", e.peak_waiters AS "peakWaiters", e.root_pid AS "rootPid",
           e.root_xact_start AS "rootXactStart",
           round(extract(epoch FROM coalesce(e.ended_at, e.last_seen_at) - e.started_at) * 1000)::int AS "durationMs",
           ${backendLabel(Prisma.sql`e.root`)} AS "rootLabel", e.root ->> 'state' AS "rootState",
           (SELECT coalesce(array_agg(DISTINCT ${backendLabel(Prisma.sql`w`)}), '{}') FROM jsonb_array_elements(e.waiters) w) AS "waitedBy",
           min(i.role) AS role, e.write_seq::text AS "writeSeq"
    FROM lock_episode_intents i JOIN lock_episodes e ON e.id = i.episode_id AND e.started_at = i.episode_started_at
    WHERE i.intent_id = ${intentId}::uuid
      AND (coalesce(e.write_seq, 0), e.id) > (${after.seq.toString()}::bigint, ${after.id.toString()}::bigint)
    GROUP BY e.id, e.started_at
    ORDER BY coalesce(e.write_seq, 0), e.id
    LIMIT ${page.limit ?? 1000}`;
  return rows.map((r) => ({ ...r, id: String(r.id), startedAt: r.startedAt.toISOString(), endedAt: r.endedAt?.toISOString() ?? null, rootXactStart: r.rootXactStart?.toISOString() ?? null }));
}

/** How long after the last wait it caused a transaction still counts as blocking for the unblock guard. */
export const RECENT_BLOCKING_MS = 60_000;

/**
 * The lock history's latest episode of this very transaction (pid, backend start, transaction start), going on or
 * ended within RECENT_BLOCKING_MS, with the lock timeouts of its intents since it began; null when none.
 */
export async function recentBlockingOf(b: { pid: number; backendStart: string | null; xactStart: string | null }): Promise<UnblockImpact['recentBlocking']> {
  if (!b.backendStart || !b.xactStart) return null;
  const rows = await db().$queryRaw<{ id: bigint; inProgress: boolean; lastSeenAt: Date; waitersSeen: number; peakWaiters: number; lockTimeouts: number }[]>`
    SELECT e.id, e.ended_at IS NULL AS "inProgress", e.last_seen_at AS "lastSeenAt", jsonb_array_length(e.waiters) AS "waitersSeen",
           e.peak_waiters AS "peakWaiters",
           (SELECT count(*)::int FROM ${episodeLockTimeouts}) AS "lockTimeouts"
    FROM lock_episodes e
    WHERE e.root_pid = ${b.pid}::int AND date_trunc('milliseconds', e.root_backend_start) = ${b.backendStart}::timestamptz
      AND date_trunc('milliseconds', e.root_xact_start) = ${b.xactStart}::timestamptz
      AND (e.ended_at IS NULL OR e.ended_at > now() - make_interval(secs => ${RECENT_BLOCKING_MS / 1000}::float8))
    ORDER BY e.started_at DESC LIMIT 1`;
  const r = rows[0];
  if (!r) return null;
  return { episodeId: String(r.id), inProgress: r.inProgress, lastSeenAt: r.lastSeenAt.toISOString(), waitersSeen: r.waitersSeen, peakWaiters: r.peakWaiters, lockTimeouts: r.lockTimeouts };
}
