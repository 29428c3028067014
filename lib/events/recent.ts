import { z } from 'zod';
import { wholeNumber } from '@/lib/shared/strict';
import { Prisma } from '@/generated/prisma/client';
import { readDb } from '@/lib/db/read';
import { ValidationError } from '@/lib/shared/errors';
import { parseInput } from '@/lib/shared/validation';
import { ALL_SUBJECTS } from './subjects';
import { intentRefSchema, resolveIntentFilter } from '@/lib/search/ids';

/**
 * The Events page's browser: the outbox's rows, newest first, one keyset page at a time, optionally of one type, of
 * one intent, and only published or only waiting ones. Each page is one range scan backwards from the cursor's id
 * (the primary key; (subject, id) for one type; (ordering_key, id) for one intent; the relays' partial index serves
 * "waiting" and the purge's "published"), so it costs the same at a thousand rows or millions, and it runs under the
 * same statement timeout as the page's counts.
 */

export const EVENT_STATES = ['published', 'waiting'] as const;
export type EventState = (typeof EVENT_STATES)[number];

/** Ids are a bigint sequence; the cursor wraps the last id shown so that callers treat it as opaque. */
const CURSOR_PATTERN = /^[A-Za-z0-9_-]{1,40}$/;

export const recentEventsQuerySchema = z.strictObject({
  type: z.enum(ALL_SUBJECTS, { error: `must be one of the event types: ${ALL_SUBJECTS.join(', ')}` }).optional(),
  state: z.enum(EVENT_STATES, { error: 'must be published or waiting' }).optional(),
  // The whole id or the first 8 or more characters the console shows: resolved to the one intent they name.
  intent: intentRefSchema.optional(),
  cursor: z.string().regex(CURSOR_PATTERN, { error: 'is not a cursor this list issued' }).optional(),
  limit: wholeNumber({ min: 1, max: 200 }).default(50),
});
export type RecentEventsQueryInput = z.input<typeof recentEventsQuerySchema>;

export type OutboxEventView = {
  /** The outbox row's id (a bigint, as a string): the order events were written in. */
  id: string;
  /** The event's own id, also its message id (`Nats-Msg-Id`). */
  eventId: string;
  type: string;
  /** Whose events stay in order: the intent id, or a lock's resource. */
  orderingKey: string;
  intentId: string | null;
  createdAt: string;
  /** When JetStream acknowledged it; null while it waits in the outbox. */
  publishedAt: string | null;
  /** JetStream's stream sequence, once published. */
  streamSeq: number | null;
  /** The message as published (or as it will be): the stored envelope with its `id`. */
  payload: Record<string, unknown>;
};

export type RecentEventsPage = { items: OutboxEventView[]; nextCursor: string | null };

/** The page's reads give way (503 db_under_pressure) instead of holding a connection, like the outbox status. */
const BROWSE_TIMEOUT_MS = 2_000;

export function encodeEventCursor(id: string): string {
  return Buffer.from(`o${id}`).toString('base64url');
}

function decodeEventCursor(cursor: string): bigint {
  const text = Buffer.from(cursor, 'base64url').toString();
  if (!/^o\d{1,19}$/.test(text) || BigInt(text.slice(1)) > 9_223_372_036_854_775_807n) {
    throw new ValidationError([{ field: 'cursor', message: 'is not a cursor this list issued' }]);
  }
  return BigInt(text.slice(1));
}

type Row = {
  id: bigint;
  eventId: string;
  type: string;
  orderingKey: string;
  intentId: string | null;
  createdAt: Date;
  publishedAt: Date | null;
  streamSeq: bigint | null;
  payload: Record<string, unknown>;
};

/** The envelope's fields in the order docs/EVENTS.md lists them (jsonb keeps its keys shortest first). */
const ENVELOPE_ORDER = ['specVersion', 'id', 'type', 'occurredAt', 'intentId', 'version', 'actor', 'data'];

function inEnvelopeOrder(payload: Record<string, unknown>): Record<string, unknown> {
  const known = ENVELOPE_ORDER.filter((key) => key in payload).map((key) => [key, payload[key]] as const);
  const others = Object.entries(payload).filter(([key]) => !ENVELOPE_ORDER.includes(key));
  return Object.fromEntries([...known, ...others]);
}

function toView(r: Row): OutboxEventView {
  return {
    id: String(r.id),
    eventId: r.eventId,
    type: r.type,
    orderingKey: r.orderingKey,
    intentId: r.intentId,
    createdAt: r.createdAt.toISOString(),
    publishedAt: r.publishedAt?.toISOString() ?? null,
    streamSeq: r.streamSeq === null ? null : Number(r.streamSeq),
    payload: inEnvelopeOrder(r.payload),
  };
}

/** One page of the outbox, newest first. Bad input is a 400 naming the field. */
export async function listRecentEvents(input: unknown): Promise<RecentEventsPage> {
  const parsed = parseInput(recentEventsQuerySchema, input ?? {});
  const q = parsed.intent ? { ...parsed, intent: await resolveIntentFilter(parsed.intent, 'intent') } : parsed;
  const before = q.cursor ? decodeEventCursor(q.cursor) : null;
  const conditions = [
    q.type ? Prisma.sql`subject = ${q.type}` : null,
    // An intent's events are keyed by its id: (ordering_key, id) serves them newest first.
    q.intent ? Prisma.sql`ordering_key = ${q.intent.toLowerCase()}` : null,
    q.state === 'waiting' ? Prisma.sql`published_at IS NULL` : q.state === 'published' ? Prisma.sql`published_at IS NOT NULL` : null,
    before === null ? null : Prisma.sql`id < ${before}::bigint`,
  ].filter((c): c is Prisma.Sql => c !== null);
  const where = conditions.length ? Prisma.sql`WHERE ${Prisma.join(conditions, ' AND ')}` : Prisma.empty;
  // An overview: served by a read replica when there is one (lib/db/read.ts), like the page's counts.
  const client = await readDb();
  const [, rows] = await client.$transaction([
    client.$executeRaw`SELECT set_config('statement_timeout', ${`${BROWSE_TIMEOUT_MS}ms`}, true)`,
    client.$queryRaw<Row[]>`
      SELECT id, event_id::text AS "eventId", subject AS type, ordering_key AS "orderingKey",
             payload->>'intentId' AS "intentId",
             created_at AS "createdAt", published_at AS "publishedAt", stream_seq AS "streamSeq",
             payload || jsonb_build_object('id', event_id::text) AS payload
      FROM outbox_events ${where}
      ORDER BY id DESC
      LIMIT ${q.limit + 1}`,
  ]);
  const items = rows.slice(0, q.limit).map(toView);
  const nextCursor = rows.length > q.limit ? encodeEventCursor(items[items.length - 1].id) : null;
  return { items, nextCursor };
}
