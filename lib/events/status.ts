import { db } from '@/lib/db/client';
import { env } from '@/lib/env';
import { PARTITIONS, RELAY_APPLICATION_NAME, RELAY_LOCK_CLASS } from './relay';
import { configuredEventStream } from './stream';
import { streamSubjects } from './subjects';

/**
 * What the console shows about events going out: the backlog (rows not yet published), the lag (age of the oldest
 * of them), what went out in the last minute, and the relays connected with the partitions each owns. All from
 * Postgres, so every console instance shows the same, whichever process runs the relays.
 */
export type OutboxStatus = {
  /** Whether this console instance is configured to relay (NATS_URL set). Other processes may relay regardless. */
  relayConfigured: boolean;
  /** Where this instance's relay publishes: the stream and its subjects (EVENTS_STREAM, EVENTS_SUBJECT_PREFIX). */
  stream: { name: string; subjects: string[] };
  backlog: number;
  lagMs: number;
  oldestUnpublishedAt: string | null;
  publishedLastMinute: number;
  lastPublishedAt: string | null;
  partitions: number;
  relays: { pid: number; startedAt: string | null; clientAddr: string | null; partitions: number[] }[];
};

type Row = { backlog: bigint; oldest: Date | null; lagMs: number | null; lastMinute: bigint; lastPublished: Date | null };

export async function outboxStatus(): Promise<OutboxStatus> {
  const [row] = await db().$queryRaw<Row[]>`
    SELECT (SELECT count(*) FROM outbox_events WHERE published_at IS NULL) AS backlog,
           (SELECT min(created_at) FROM outbox_events WHERE published_at IS NULL) AS oldest,
           (SELECT extract(epoch FROM now() - min(created_at)) * 1000 FROM outbox_events WHERE published_at IS NULL)::float8 AS "lagMs",
           (SELECT count(*) FROM outbox_events WHERE published_at > now() - interval '1 minute') AS "lastMinute",
           (SELECT max(published_at) FROM outbox_events WHERE published_at IS NOT NULL) AS "lastPublished"`;
  const relays = await db().$queryRaw<{ pid: number; startedAt: Date | null; clientAddr: string | null; partitions: number[] }[]>`
    SELECT a.pid, a.backend_start AS "startedAt", host(a.client_addr) AS "clientAddr",
           coalesce(array_agg(l.objid::int ORDER BY l.objid) FILTER (WHERE l.objid IS NOT NULL), '{}') AS partitions
    FROM pg_stat_activity a
    LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND l.classid = ${RELAY_LOCK_CLASS}::oid AND l.granted
    WHERE a.datname = current_database() AND a.application_name = ${RELAY_APPLICATION_NAME}
    GROUP BY a.pid, a.backend_start, a.client_addr
    ORDER BY a.pid`;
  return {
    relayConfigured: Boolean(env().NATS_URL),
    stream: { name: configuredEventStream().name, subjects: streamSubjects(configuredEventStream()) },
    backlog: Number(row.backlog),
    lagMs: Math.max(0, Math.round(row.lagMs ?? 0)),
    oldestUnpublishedAt: row.oldest?.toISOString() ?? null,
    publishedLastMinute: Number(row.lastMinute),
    lastPublishedAt: row.lastPublished?.toISOString() ?? null,
    partitions: PARTITIONS,
    relays: relays.map((r) => ({ ...r, startedAt: r.startedAt?.toISOString() ?? null })),
  };
}
