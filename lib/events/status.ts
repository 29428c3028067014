import { db } from '@/lib/db/client';
import { readDb } from '@/lib/db/read';
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
  /** Rows not yet published, counted up to BACKLOG_COUNT_CAP (then `backlogCapped` says "at least"). */
  backlog: number;
  backlogCapped: boolean;
  lagMs: number;
  oldestUnpublishedAt: string | null;
  publishedLastMinute: number;
  lastPublishedAt: string | null;
  partitions: number;
  relays: { pid: number; startedAt: string | null; clientAddr: string | null; partitions: number[] }[];
};

/**
 * Past this many waiting events the page says "10,000+": counting a backlog of hundreds of thousands (a console
 * with no relay configured keeps every event) would read the whole unpublished index on every poll of every viewer.
 */
export const BACKLOG_COUNT_CAP = 10_000;
/** The status is a dashboard read: past this it gives way (503 db_under_pressure) instead of holding a connection. */
const STATUS_TIMEOUT_MS = 2_000;

type Row = { backlog: bigint; oldest: Date | null; lagMs: number | null; lastMinute: bigint; lastPublished: Date | null };

/** Callers asking while a read is under way share it: twenty viewers polling cost one read, not twenty. */
let reading: Promise<OutboxStatus> | null = null;

export function outboxStatus(): Promise<OutboxStatus> {
  reading ??= readOutboxStatus().finally(() => {
    reading = null;
  });
  return reading;
}

async function readOutboxStatus(): Promise<OutboxStatus> {
  // The oldest waiting event: the lowest id in each partition's unpublished index (ids are handed out in insert
  // order, so that is the oldest row give or take transactions in flight), one index probe per partition instead
  // of a scan of the whole backlog.
  const client = await readDb();
  const [, [row]] = await client.$transaction([
    client.$executeRaw`SELECT set_config('statement_timeout', ${`${STATUS_TIMEOUT_MS}ms`}, true)`,
    client.$queryRaw<Row[]>`
    WITH oldest AS (
      SELECT min(o.created_at) AS at
      FROM generate_series(0, ${PARTITIONS - 1}::int) AS p(n)
      CROSS JOIN LATERAL (
        SELECT created_at FROM outbox_events WHERE partition = p.n AND published_at IS NULL ORDER BY id LIMIT 1
      ) o
    )
    SELECT (SELECT count(*) FROM (SELECT 1 FROM outbox_events WHERE published_at IS NULL LIMIT ${BACKLOG_COUNT_CAP + 1}) w) AS backlog,
           (SELECT at FROM oldest) AS oldest,
           (SELECT extract(epoch FROM now() - at) * 1000 FROM oldest)::float8 AS "lagMs",
           (SELECT count(*) FROM outbox_events WHERE published_at > now() - interval '1 minute') AS "lastMinute",
           (SELECT max(published_at) FROM outbox_events WHERE published_at IS NOT NULL) AS "lastPublished"`,
  ]);
  // Who holds the relay locks is the primary's present (its sessions and their advisory locks): a replica has neither.
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
    backlog: Math.min(Number(row.backlog), BACKLOG_COUNT_CAP),
    backlogCapped: Number(row.backlog) > BACKLOG_COUNT_CAP,
    lagMs: Math.max(0, Math.round(row.lagMs ?? 0)),
    oldestUnpublishedAt: row.oldest?.toISOString() ?? null,
    publishedLastMinute: Number(row.lastMinute),
    lastPublishedAt: row.lastPublished?.toISOString() ?? null,
    partitions: PARTITIONS,
    relays: relays.map((r) => ({ ...r, startedAt: r.startedAt?.toISOString() ?? null })),
  };
}
