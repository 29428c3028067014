import { z } from 'zod';
import { Prisma } from '@/generated/prisma/client';
import { planWithValues } from '@/lib/db/client';
import { readDb } from '@/lib/db/read';
import { baseConditions, checkContention, checkRange, countsUnder, LIST_TIMEOUT_MS, resolveSearch, SearchTooSlowError, TIMED_OUT, whereClause, withTimeout, type ResolvedSearch } from '@/lib/search/intents';
import { NotFoundError, ValidationError } from '@/lib/shared/errors';
import { INTENT_COLUMNS, selectAuditEvents, selectConflictEvents, selectIntent, selectIntentWithCorrections, toIntent, type IntentRow } from './repository';
import { listIntentsSchema } from './schemas';
import { intentIdSchema } from '@/lib/shared/fields';
import { parseInput } from '@/lib/shared/validation';
import { INTENT_STATUSES, type IntentStatus } from '@/lib/shared/intent-states';
import type { AuditEvent, ConflictEvent, Intent, IntentWithCorrections } from '@/lib/shared/intent-types';

/** Keyset cursor over (updated_at desc, id desc): opaque to callers, stable under concurrent inserts. */
type Cursor = { u: string; i: string };

export function encodeCursor(intent: Pick<Intent, 'updatedAt' | 'id'>): string {
  return Buffer.from(JSON.stringify({ u: intent.updatedAt, i: intent.id } satisfies Cursor)).toString('base64url');
}

export function decodeCursor(cursor: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Cursor;
    // Only a timestamp this API could have written: an ISO instant between 1970 and 9999 (PostgreSQL refuses some
    // dates JavaScript accepts, and a cursor is a client's echo, not trusted input).
    const at = typeof value.u === 'string' && /^\d{4}-\d{2}-\d{2}T[0-9:.]+(Z|[+-]\d{2}:\d{2})$/.test(value.u) ? Date.parse(value.u) : NaN;
    if (!(at >= 0 && at < Date.UTC(10000, 0, 1)) || !intentIdSchema.safeParse(value.i).success) throw new Error();
    return value;
  } catch {
    throw new ValidationError([{ field: 'cursor', message: 'is not a cursor this API issued' }]);
  }
}

/** The list's query: the JSON API's filters, plus a source and a time range (lib/search/intents.ts). */
export type ListQueryInput = z.input<typeof listIntentsSchema>;

export type IntentList = { items: Intent[]; nextCursor: string | null };

/**
 * A keyset page of the list, newest change first, under a status, a search (lib/search/parse.ts: an id, a source or
 * payload text), a source and a time range. A payload search that cannot be answered quickly is cancelled and
 * answered 422 (SearchTooSlowError) rather than left scanning.
 */
export async function listIntents(input: ListQueryInput, resolved?: { search: ResolvedSearch }): Promise<IntentList> {
  const { status, q, limit, cursor, order, includeReplay, source, from, to, stuck, ...contention } = parseInput(listIntentsSchema, input);
  checkRange(from, to);
  checkContention(contention);
  const filters = { q, source, from, to, stuck, ...contention, includeReplay: includeReplay === 'true' };
  const oldest = order === 'oldest';
  // A page that already resolved this search (to know whether to open an intent) passes it on.
  const search = resolved?.search ?? (await resolveSearch(q, filters.includeReplay));
  const where = baseConditions(filters, search);
  if (status) where.push(Prisma.sql`status = ${status}::"IntentStatus"`);
  if (cursor) {
    const c = decodeCursor(cursor);
    where.push(oldest ? Prisma.sql`(updated_at, id) > (${new Date(c.u)}::timestamptz, ${c.i}::uuid)` : Prisma.sql`(updated_at, id) < (${new Date(c.u)}::timestamptz, ${c.i}::uuid)`);
  }
  // The same indexes read backwards: the longest unchanged first.
  const orderBy = oldest ? Prisma.sql`ORDER BY updated_at ASC, id ASC` : Prisma.sql`ORDER BY updated_at DESC, id DESC`;
  const client = await readDb();
  const query = client.$queryRaw<IntentRow[]>`${planWithValues}
    SELECT ${INTENT_COLUMNS} FROM intents ${whereClause(where)} ${orderBy} LIMIT ${limit + 1}`;
  const rows = search.scansPayload ? await withTimeout(LIST_TIMEOUT_MS, query, client) : await query;
  if (rows === TIMED_OUT) throw new SearchTooSlowError('list');
  const items = rows.slice(0, limit).map(toIntent);
  return { items, nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1]) : null };
}

/**
 * Counts per status for the filter bar, under the same search (not the status filter itself): the maintained
 * counts without a search (lib/counts), capped counts under one (see countsUnder for the cap and the time bound).
 */
export async function countIntentsByStatus(input: { q?: string; includeReplay?: boolean } = {}): Promise<Record<IntentStatus, number>> {
  const answer = await countsUnder({ q: input.q, includeReplay: input.includeReplay });
  return answer.counts ?? (Object.fromEntries(INTENT_STATUSES.map((s) => [s, 0])) as Record<IntentStatus, number>);
}

function idOrThrow(id: unknown): string {
  return parseInput(intentIdSchema, id, 'id');
}

export async function getIntent(idInput: string): Promise<IntentWithCorrections> {
  const id = idOrThrow(idInput);
  const intent = await selectIntentWithCorrections(id);
  if (!intent) throw new NotFoundError(`Intent ${id}`, { id });
  return intent;
}

export async function getIntentAudit(idInput: string): Promise<AuditEvent[]> {
  const id = idOrThrow(idInput);
  return (await readDb()).$transaction(
    async (tx) => {
      if (!(await selectIntent(tx, id))) throw new NotFoundError(`Intent ${id}`, { id });
      return selectAuditEvents(tx, id);
    },
    { isolationLevel: 'RepeatableRead' },
  );
}

export async function getIntentConflicts(idInput: string): Promise<ConflictEvent[]> {
  const id = idOrThrow(idInput);
  return (await readDb()).$transaction(async (tx) => {
    if (!(await selectIntent(tx, id))) throw new NotFoundError(`Intent ${id}`, { id });
    return selectConflictEvents(tx, id);
  });
}
