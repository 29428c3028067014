import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Prisma } from '@/generated/prisma/client';
import type { Tx } from '@/lib/db/client';
import { configuredEventStream } from '@/lib/events/stream';
import { SAMPLE, type Check, type CheckOutcome, type Violation } from './checks';

/**
 * The outbox's promises (docs/EVENTS.md): every intent change, correction and refused command has exactly one
 * outbox event, written in its own transaction; every event reaches the stream once after JetStream's
 * deduplication; none is lost on the way.
 *
 * Published rows are deleted after the retention period, so the tables of record are compared with the outbox only
 * for what happened since then (and since the outbox exists): `retentionHours` must be the relays'
 * OUTBOX_RETENTION_HOURS (72 unless configured).
 */
const INTENT_SUBJECTS = ['evt.intent.created', 'evt.intent.status_changed', 'evt.intent.corrected', 'evt.intent.conflict'];
const OUTBOX_MIGRATION = '20261124120000_outbox';

async function sampled(tx: Tx, query: Prisma.Sql): Promise<{ violations: Violation[]; violationCount: number }> {
  const rows = await tx.$queryRaw<{ subject: string; detail: string; total: bigint }[]>`
    WITH bad AS (${query}) SELECT subject, detail, count(*) OVER () AS total FROM bad LIMIT ${SAMPLE}`;
  return { violations: rows.map(({ subject, detail }) => ({ subject, detail })), violationCount: rows.length ? Number(rows[0].total) : 0 };
}

function windowStart(retentionHours: number): Prisma.Sql {
  return Prisma.sql`(SELECT greatest(now() - make_interval(hours => ${retentionHours}::int),
                                     coalesce((SELECT finished_at FROM _prisma_migrations WHERE migration_name = ${OUTBOX_MIGRATION}), '-infinity')))`;
}

/**
 * The tables of record against the outbox, in one snapshot: per intent, version and kind of event, as many outbox
 * events as records (contention-replay intents have none by design). Published rows each name their own stream
 * sequence: two rows acknowledged with one sequence would be one message standing for two events.
 */
export function outboxComplete(retentionHours = 72): Check {
  return {
    name: 'outbox_complete',
    promise: 'every intent change, correction and refused command has exactly one outbox event, each acknowledged as its own message',
    requires: ['outbox_events', 'audit_events', 'corrections', 'conflict_events', 'intents', '_prisma_migrations'],
    run: async (tx) => {
      const since = windowStart(retentionHours);
      const bad = await sampled(
        tx,
        Prisma.sql`
          WITH records AS (
            SELECT CASE WHEN a.action = 'created' THEN 'evt.intent.created' ELSE 'evt.intent.status_changed' END AS type,
                   a.intent_id, a.version_after AS version, count(*) AS n
            FROM audit_events a JOIN intents i ON i.id = a.intent_id AND NOT i.is_replay
            WHERE a.at >= ${since}
              AND (a.action = 'created' OR (a.action <> 'correction' AND a.from_status IS NOT NULL AND a.from_status IS DISTINCT FROM a.to_status))
            GROUP BY 1, 2, 3
            UNION ALL
            SELECT 'evt.intent.corrected', c.intent_id, c.version_after, count(*)
            FROM corrections c JOIN intents i ON i.id = c.intent_id AND NOT i.is_replay
            WHERE c.created_at >= ${since} GROUP BY 1, 2, 3
            UNION ALL
            SELECT 'evt.intent.conflict', c.intent_id, c.current_version, count(*)
            FROM conflict_events c JOIN intents i ON i.id = c.intent_id AND NOT i.is_replay
            WHERE c.at >= ${since} GROUP BY 1, 2, 3
          ), events AS (
            SELECT subject AS type, (payload->>'intentId')::uuid AS intent_id, (payload->>'version')::int AS version, count(*) AS n
            FROM outbox_events
            WHERE subject = ANY(${INTENT_SUBJECTS}::text[]) AND created_at >= ${since}
            GROUP BY 1, 2, 3
          )
          SELECT coalesce(r.intent_id, e.intent_id)::text AS subject,
                 format('%s at version %s: %s record(s), %s outbox event(s)', coalesce(r.type, e.type), coalesce(r.version, e.version),
                        coalesce(r.n, 0), coalesce(e.n, 0)) AS detail
          FROM records r FULL JOIN events e ON e.type = r.type AND e.intent_id = r.intent_id AND e.version = r.version
          WHERE coalesce(r.n, 0) <> coalesce(e.n, 0)
          UNION ALL
          SELECT string_agg(id::text, ', '), format('%s outbox events were acknowledged with one stream sequence %s', count(*), stream_seq)
          FROM outbox_events WHERE stream_seq IS NOT NULL GROUP BY stream_seq HAVING count(*) > 1
          UNION ALL
          SELECT id::text, 'marked published without the stream sequence that acknowledged it'
          FROM outbox_events WHERE published_at IS NOT NULL AND stream_seq IS NULL`,
      );
      const [{ n }] = await tx.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox_events WHERE created_at >= ${since}`;
      return { checked: Number(n), ...bad };
    },
  };
}

type StreamCopy = { seq: number; id: string | null };

/** Every message in the stream: its sequence and the event id it carries (the payload's `id`). */
async function readStream(natsUrl: string, stream: string): Promise<{ copies: StreamCopy[]; unreadable: number }> {
  const nc = await connect({ servers: natsUrl, timeout: 5_000 });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream).catch(() => null);
    if (!info || info.state.messages === 0) return { copies: [], unreadable: 0 };
    const copies: StreamCopy[] = [];
    let unreadable = 0;
    // An ordered consumer reads the whole stream in order at the server's pace; it ends at the last sequence the
    // stream had when the check began (the relays may still be adding to it).
    const consumer = await jsm.jetstream().consumers.get(stream, { opt_start_seq: info.state.first_seq });
    const last = info.state.last_seq;
    let seen = 0;
    while (copies.length + unreadable < info.state.messages && seen < last) {
      const batch = await consumer.fetch({ max_messages: 1_000, expires: 2_000 });
      let got = 0;
      for await (const m of batch) {
        got++;
        seen = m.seq;
        try {
          const body = m.json<{ id?: unknown }>();
          copies.push({ seq: m.seq, id: typeof body.id === 'string' ? body.id : null });
        } catch {
          unreadable++;
        }
        if (m.seq >= last) break;
      }
      // Nothing more within the wait: the rest was deleted from the stream (its last sequence stays).
      if (!got) break;
    }
    return { copies: copies.filter((c) => c.seq <= last), unreadable };
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/**
 * The outbox against the stream itself: each published event is in the stream exactly once (JetStream's
 * deduplication kept one copy) at the sequence its acknowledgement gave, and none the outbox marked published is
 * missing from it. With `drained` (the chaos run, after the relays were given time to catch up) an event still
 * unpublished counts as lost too; against a live system it is the backlog and only reported. `stream`: the stream the
 * relays publish to (EVENTS_STREAM unless given).
 */
export function outboxPublishedOnce(natsUrl: string, options: { drained?: boolean; stream?: string } = {}): Check {
  const stream = options.stream ?? configuredEventStream().name;
  return {
    name: 'outbox_published_once',
    promise: 'every outbox event published once after deduplication, and none lost',
    requires: ['outbox_events'],
    run: async (tx): Promise<CheckOutcome> => {
      // The database first: a row marked published in this snapshot was acknowledged before it, so it is in the
      // stream read afterwards.
      const rows = await tx.$queryRaw<{ id: string; seq: bigint | null; published: boolean }[]>`
        SELECT event_id::text AS id, stream_seq AS seq, published_at IS NOT NULL AS published FROM outbox_events ORDER BY outbox_events.id`;
      const { copies, unreadable } = await readStream(natsUrl, stream);
      const byId = new Map<string, number[]>();
      for (const c of copies) if (c.id !== null) byId.set(c.id, [...(byId.get(c.id) ?? []), c.seq]);
      const found: Violation[] = [];
      let backlog = 0;
      for (const r of rows) {
        const id = r.id;
        const seqs = byId.get(id) ?? [];
        if (seqs.length > 1) found.push({ subject: id, detail: `in the stream ${seqs.length} times (sequences ${seqs.join(', ')})` });
        if (!r.published) {
          if (seqs.length === 0) {
            backlog++;
            if (options.drained) found.push({ subject: id, detail: 'never published: not marked, not in the stream' });
          }
          continue;
        }
        if (seqs.length === 0) found.push({ subject: id, detail: `marked published at stream sequence ${r.seq}, but the stream does not have it` });
        else if (r.seq !== null && !seqs.includes(Number(r.seq))) {
          found.push({ subject: id, detail: `marked published at stream sequence ${r.seq}, but the stream has it at ${seqs.join(', ')}` });
        }
      }
      const known = new Set(rows.map((r) => r.id));
      // Messages for outbox rows that never existed here. Only past the oldest published row's sequence: what came
      // before it was purged after its retention period (or published by a database this stream served earlier).
      const oldest = rows.reduce<number | null>((min, r) => (r.seq === null ? min : Math.min(min ?? Infinity, Number(r.seq))), null);
      for (const [id, seqs] of byId) {
        if (!known.has(id) && oldest !== null && seqs.some((q) => q > oldest)) {
          found.push({ subject: id, detail: `in the stream (sequence ${seqs.join(', ')}) but this database has no such outbox event (another database publishing to this stream?)` });
        }
      }
      if (unreadable) found.push({ subject: stream, detail: `${unreadable} message(s) are not JSON events` });
      const notes = [`${copies.length} messages in the stream`];
      if (backlog && !options.drained) notes.push(`${backlog} event(s) not published yet (the backlog)`);
      return { checked: rows.length, violations: found.slice(0, SAMPLE), violationCount: found.length, note: notes.join('; ') };
    },
  };
}
