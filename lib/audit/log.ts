import { z } from 'zod';
import { wholeNumber } from '@/lib/shared/strict';
import { Prisma } from '@/generated/prisma/client';
import { readDb } from '@/lib/db/read';
import { ValidationError } from '@/lib/shared/errors';
import { filterNameSchema } from '@/lib/shared/fields';
import { parseInput } from '@/lib/shared/validation';
import { AUDIT_ACTIONS, AUDIT_ACTION_NAMES, type AuditSource } from './actions';
import { intentRefSchema, resolveIntentFilter } from '@/lib/search/ids';

/**
 * The global audit log: audit_events (intents, bulk batches, Locks actions) and auth_events (sign-ins, users,
 * tokens) read as one list, newest first. Each table is read with one keyset range scan on an index ending in
 * (at, id) (see the audit_page migration), limited to one page, and the two pages are merged here: a page costs
 * the same at a thousand rows or tens of millions, and no count of the whole log is ever taken.
 */

/** A time as typed in a datetime-local field (read as UTC, as the console writes times) or a full ISO timestamp. */
export const timeSchema = z
  .string({ error: 'must be a date and time' })
  .trim()
  .max(40, { error: 'must be a date and time like 2026-11-23T18:00' })
  .transform((v, ctx) => {
    const iso = /(Z|[+-]\d\d:?\d\d)$/i.test(v) ? v : `${v}Z`;
    const at = /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(v) ? new Date(iso) : new Date(Number.NaN);
    if (Number.isNaN(at.getTime())) {
      ctx.addIssue({ code: 'custom', message: 'must be a date and time like 2026-11-23T18:00 (UTC)' });
      return z.NEVER;
    }
    return at;
  });

export const auditQuerySchema = z.strictObject({
  actor: filterNameSchema.optional(),
  action: z.enum(AUDIT_ACTION_NAMES as [string, ...string[]], { error: 'must be one of the actions the audit log records' }).optional(),
  // The whole id or the first 8 or more characters the console shows: resolved to the one intent they name.
  intent: intentRefSchema.optional(),
  from: timeSchema.optional(),
  to: timeSchema.optional(),
  // A contention replay writes thousands of entries about its own synthetic intents; like the Intents page, the log
  // leaves them out unless asked (`includeReplay=true`, as on the Intents list), or unless one is asked for by its id.
  includeReplay: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
  cursor: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/, { error: 'is not a cursor this log issued' }).optional(),
  limit: wholeNumber({ min: 1, max: 200 }).default(50),
}).refine((q) => !(q.from && q.to && q.to < q.from), { path: ['to'], error: 'must not be before from' });
export type AuditQueryInput = z.input<typeof auditQuerySchema>;
export type AuditQuery = z.output<typeof auditQuerySchema>;

export type AuditEntry = {
  /** `intent:<id>` or `auth:<id>`: unique across both tables. */
  key: string;
  source: AuditSource;
  id: string;
  at: string;
  actor: string;
  action: string;
  intentId: string | null;
  /** The username acted upon (user and token changes). */
  subject: string | null;
  fromStatus: string | null;
  toStatus: string | null;
  versionBefore: number | null;
  versionAfter: number | null;
  ip: string | null;
  details: Record<string, unknown> | null;
};

export type AuditPage = { items: AuditEntry[]; nextCursor: string | null };

/** At equal times, intent rows come before auth rows; then higher ids first. */
const SOURCE_RANK: Record<AuditSource, number> = { intent: 1, auth: 0 };
const MAX_ID = 9_223_372_036_854_775_807n;

type Cursor = { at: Date; source: AuditSource; id: bigint };

function encodeCursor(entry: AuditEntry): string {
  return Buffer.from(`${entry.at}|${entry.source}|${entry.id}`).toString('base64url');
}

function decodeCursor(cursor: string): Cursor {
  const [at, source, id] = Buffer.from(cursor, 'base64url').toString().split('|');
  const when = new Date(at ?? '');
  if (Number.isNaN(when.getTime()) || (source !== 'intent' && source !== 'auth') || !/^\d{1,19}$/.test(id ?? '')) {
    throw new ValidationError([{ field: 'cursor', message: 'is not a cursor this log issued' }]);
  }
  return { at: when, source: source as AuditSource, id: BigInt(id!) };
}

/**
 * Rows strictly after the cursor in (at desc, source rank desc, id desc) order, written as one row comparison
 * `(at, id) < (cursor.at, bound)` so the (…, at, id) indexes serve it: for the cursor's own table the bound is
 * its id; a table ranked after it still has every row at that instant to come (bound: the largest id); a table
 * ranked before it has none left at that instant (bound 0, ids start at 1). The plain `at <=` beside it says the
 * same for the planner's partition pruning, which does not look inside a row comparison: audit_events' months
 * newer than the cursor are skipped without being opened.
 */
function afterCursor(source: AuditSource, cursor: Cursor | null): Prisma.Sql | null {
  if (!cursor) return null;
  const bound = cursor.source === source ? cursor.id : SOURCE_RANK[source] < SOURCE_RANK[cursor.source] ? MAX_ID : 0n;
  return Prisma.sql`at <= ${cursor.at}::timestamptz AND (at, id) < (${cursor.at}::timestamptz, ${bound}::bigint)`;
}

function where(parts: (Prisma.Sql | null)[]): Prisma.Sql {
  const present = parts.filter((p): p is Prisma.Sql => p !== null);
  return present.length ? Prisma.sql`WHERE ${Prisma.join(present, ' AND ')}` : Prisma.empty;
}

type IntentRow = {
  id: bigint; at: Date; actor: string; action: string; intentId: string | null; fromStatus: string | null; toStatus: string | null;
  versionBefore: number | null; versionAfter: number | null; details: Record<string, unknown> | null;
};
type AuthRow = { id: bigint; at: Date; actor: string; action: string; subject: string | null; ip: string | null; details: Record<string, unknown> | null };

async function readIntentSide(q: AuditQuery, cursor: Cursor | null, take: number) {
  const clause = where([
    q.actor ? Prisma.sql`actor = ${q.actor}` : null,
    q.action ? Prisma.sql`action = ${q.action}` : null,
    q.intent ? Prisma.sql`intent_id = ${q.intent}::uuid` : null,
    q.from ? Prisma.sql`at >= ${q.from}::timestamptz` : null,
    q.to ? Prisma.sql`at < ${q.to}::timestamptz` : null,
    q.includeReplay !== 'true' && !q.intent ? Prisma.sql`NOT EXISTS (SELECT 1 FROM intents i WHERE i.id = audit_events.intent_id AND i.is_replay)` : null,
    afterCursor('intent', cursor),
  ]);
  return (await readDb()).$queryRaw<IntentRow[]>`
    SELECT id, at, actor, action, intent_id::text AS "intentId", from_status::text AS "fromStatus", to_status::text AS "toStatus",
           version_before AS "versionBefore", version_after AS "versionAfter", details
    FROM audit_events ${clause}
    ORDER BY at DESC, id DESC
    LIMIT ${take}`;
}

async function readAuthSide(q: AuditQuery, cursor: Cursor | null, take: number) {
  const clause = where([
    q.actor ? Prisma.sql`actor = ${q.actor}` : null,
    q.action ? Prisma.sql`action = ${q.action}` : null,
    q.from ? Prisma.sql`at >= ${q.from}::timestamptz` : null,
    q.to ? Prisma.sql`at < ${q.to}::timestamptz` : null,
    afterCursor('auth', cursor),
  ]);
  return (await readDb()).$queryRaw<AuthRow[]>`
    SELECT id, at, actor, action, subject, ip, details
    FROM auth_events ${clause}
    ORDER BY at DESC, id DESC
    LIMIT ${take}`;
}

function fromIntentRow(r: IntentRow): AuditEntry {
  return {
    key: `intent:${r.id}`, source: 'intent', id: String(r.id), at: r.at.toISOString(), actor: r.actor, action: r.action, intentId: r.intentId,
    subject: null, fromStatus: r.fromStatus, toStatus: r.toStatus, versionBefore: r.versionBefore, versionAfter: r.versionAfter, ip: null, details: r.details,
  };
}

function fromAuthRow(r: AuthRow): AuditEntry {
  return {
    key: `auth:${r.id}`, source: 'auth', id: String(r.id), at: r.at.toISOString(), actor: r.actor, action: r.action, intentId: null,
    subject: r.subject, fromStatus: null, toStatus: null, versionBefore: null, versionAfter: null, ip: r.ip, details: r.details,
  };
}

function newestFirst(a: AuditEntry, b: AuditEntry): number {
  if (a.at !== b.at) return a.at < b.at ? 1 : -1;
  if (a.source !== b.source) return SOURCE_RANK[b.source] - SOURCE_RANK[a.source];
  return BigInt(b.id) > BigInt(a.id) ? 1 : BigInt(b.id) < BigInt(a.id) ? -1 : 0;
}

/** One page of the audit log, newest first. Bad filters are a 400 naming the field. */
export async function listAudit(input: unknown): Promise<AuditPage> {
  const parsed = parseInput(auditQuerySchema, input ?? {});
  const q = parsed.intent ? { ...parsed, intent: await resolveIntentFilter(parsed.intent, 'intent') } : parsed;
  const cursor = q.cursor ? decodeCursor(q.cursor) : null;
  // An intent filter, or an action recorded in only one table, leaves the other table out entirely.
  const source = q.action ? AUDIT_ACTIONS[q.action as keyof typeof AUDIT_ACTIONS].source : null;
  const readIntents = source !== 'auth';
  const readAuth = source !== 'intent' && !q.intent;
  const take = q.limit + 1;
  const [intentRows, authRows] = await Promise.all([
    readIntents ? readIntentSide(q, cursor, take) : Promise.resolve([]),
    readAuth ? readAuthSide(q, cursor, take) : Promise.resolve([]),
  ]);
  const merged = [...intentRows.map(fromIntentRow), ...authRows.map(fromAuthRow)].sort(newestFirst);
  const items = merged.slice(0, q.limit);
  const nextCursor = merged.length > q.limit ? encodeCursor(items[items.length - 1]) : null;
  return { items, nextCursor };
}

/** Names to offer in the actor filter: the console's users (the log itself is never scanned for them). */
export async function knownActors(): Promise<string[]> {
  const rows = await (await readDb()).user.findMany({ select: { username: true }, orderBy: { username: 'asc' }, take: 500 });
  return rows.map((r) => r.username);
}
