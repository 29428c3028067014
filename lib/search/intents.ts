import { Prisma } from '@/generated/prisma/client';
import { COUNT_CAP, exactAnswer, type CountsAnswer } from '@/lib/counts/answer';
import { countsFromRows, maintainedStatusCounts, statusCountsQuery } from '@/lib/counts/status-counts';
import { db, planWithValues, type Db, type Tx } from '@/lib/db/client';
import { readDb } from '@/lib/db/read';
import { SQLSTATE, sqlState } from '@/lib/db/sqlstate';
import { DomainError, ValidationError } from '@/lib/shared/errors';
import { INTENT_STATUSES, type IntentStatus } from '@/lib/shared/intent-states';
import { SERIES, SERIES_KEYS, type SeriesKey } from '@/lib/contention/series';
import { stuckMinutes } from './stuck';
import { parseSearch, tooShortPatterns, uuidPrefixRange, type PayloadSearch } from './parse';

/**
 * The read side of the Intents list at scale: what a search means against the data (an id, a source, payload text),
 * the filters as SQL every index of the list can serve, and the counts under a search — exact up to a cap, and
 * bounded in time.
 *
 * Indexes behind each filter (EXPLAINed in docs/SCALE.md): the list order (updated_at desc, id desc) with
 * is_replay, and with status or source in front; the primary key for ids and id prefixes (a range); the trigram
 * index on `payload::text` for payload text. A time range is a range of the same list indexes.
 */
export class SearchTooSlowError extends DomainError {
  readonly code = 'search_too_slow';
  readonly httpStatus = 422;
  constructor(what: 'list' | 'counts') {
    super(
      `This search could not be answered within ${what === 'list' ? LIST_TIMEOUT_MS : COUNTS_TIMEOUT_MS} ms: it matches too much of the payload text to sort quickly. Narrow it with more text, a source, a status or a time range.`,
      { fields: [{ field: 'q', message: 'matches too much to answer quickly' }] },
    );
  }
}

/** A payload search that takes longer is cancelled and answered with 422 instead of scanning for seconds. */
export const LIST_TIMEOUT_MS = 1_500;
/** Counts under a payload search stop counting here and answer the planner's estimate instead. */
export const COUNTS_TIMEOUT_MS = 120;

/** The intents behind a Contention figure: those that met one of its outcomes, in one operation, in a time span. */
export type ContentionFilter = {
  contention?: SeriesKey | null;
  contentionOperation?: string | null;
  contentionFrom?: string | null;
  contentionTo?: string | null;
};

export type IntentFilters = ContentionFilter & {
  status?: IntentStatus | null;
  q?: string | null;
  source?: string | null;
  from?: string | null;
  to?: string | null;
  /** Not yet COMPLETED and unchanged for longer than this (`4h`): the stuck view. */
  stuck?: string | null;
  includeReplay?: boolean;
};

export function checkRange(from: string | null | undefined, to: string | null | undefined): void {
  if (from && to && Date.parse(from) > Date.parse(to)) throw new ValidationError([{ field: 'to', message: 'must not be before from' }]);
}

/** The contention filter's refinements make sense only with a figure to refine, and its span must run forwards. */
export function checkContention(filter: ContentionFilter): void {
  if (!filter.contention) {
    const given = (['contentionOperation', 'contentionFrom', 'contentionTo'] as const).find((k) => filter[k]);
    if (given) throw new ValidationError([{ field: 'contention', message: `is required with ${given} (one of ${SERIES_KEYS.join(', ')})` }]);
  }
  if (filter.contentionFrom && filter.contentionTo && Date.parse(filter.contentionFrom) > Date.parse(filter.contentionTo)) {
    throw new ValidationError([{ field: 'contentionTo', message: 'must not be before contentionFrom' }]);
  }
}

/** One indexed range read of intent_outcome_minutes (its key starts with outcome and minute). */
function contentionCondition(filter: ContentionFilter): Prisma.Sql | null {
  if (!filter.contention) return null;
  const parts = [Prisma.sql`outcome = ANY(${[...SERIES[filter.contention].outcomes]}::text[])`];
  if (filter.contentionFrom) parts.push(Prisma.sql`minute >= date_trunc('minute', ${new Date(filter.contentionFrom)}::timestamptz)`);
  if (filter.contentionTo) parts.push(Prisma.sql`minute < ${new Date(filter.contentionTo)}::timestamptz`);
  if (filter.contentionOperation) parts.push(Prisma.sql`operation = ${filter.contentionOperation}`);
  return Prisma.sql`id IN (SELECT intent_id FROM intent_outcome_minutes WHERE ${Prisma.join(parts, ' AND ')})`;
}

export type ResolvedSearch = {
  /** How the text was understood, for the filter bar ("matched by source"). */
  kind: 'none' | 'id' | 'idPrefix' | 'idOrPayload' | 'source' | 'payload';
  conditions: Prisma.Sql[];
  /** One intent has that id (prefix): the page opens it instead of a list of one. */
  jumpTo: string | null;
  /** Whether a trigram search is involved (such queries are bounded in time). */
  scansPayload: boolean;
};

/** Escapes LIKE wildcards so a search for "50%" means the text "50%". */
function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function payloadConditions(payload: PayloadSearch): Prisma.Sql[] {
  const short = tooShortPatterns(payload);
  if (short.length) throw new ValidationError([{ field: 'q', message: `needs at least 3 characters in each word to search the payload (“${short[0]}” is too short)` }]);
  return payload.patterns.map((p) => Prisma.sql`payload::text ILIKE ${likePattern(p)}`);
}

const replayFlags = (includeReplay: boolean) => (includeReplay ? [false, true] : [false]);

/** Decides what `q` means against the data: at most one small indexed lookup (an id, an id range or a source). */
export async function resolveSearch(q: string | null | undefined, includeReplay = false, given?: Tx): Promise<ResolvedSearch> {
  const parsed = parseSearch(q);
  const client = given ?? (await readDb());
  switch (parsed.kind) {
    case 'none':
      return { kind: 'none', conditions: [], jumpTo: null, scansPayload: false };
    case 'source':
      return { kind: 'source', conditions: [Prisma.sql`source = ${parsed.source}`], jumpTo: null, scansPayload: false };
    case 'id': {
      const rows = await client.$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM intents WHERE id = ${parsed.id}::uuid`;
      if (rows.length) return { kind: 'id', conditions: [Prisma.sql`id = ${parsed.id}::uuid`], jumpTo: rows[0].id, scansPayload: false };
      return { kind: 'payload', conditions: payloadConditions(parsed.payload), jumpTo: null, scansPayload: true };
    }
    case 'idPrefix': {
      const { low, high } = uuidPrefixRange(parsed.prefix);
      const rows = await client.$queryRaw<{ id: string }[]>`
        SELECT id::text AS id FROM intents WHERE id BETWEEN ${low}::uuid AND ${high}::uuid ORDER BY id LIMIT 2`;
      if (rows.length) {
        return { kind: 'idPrefix', conditions: [Prisma.sql`id BETWEEN ${low}::uuid AND ${high}::uuid`], jumpTo: rows.length === 1 ? rows[0].id : null, scansPayload: false };
      }
      return { kind: 'payload', conditions: payloadConditions(parsed.payload), jumpTo: null, scansPayload: true };
    }
    case 'idOrPayload': {
      // The primary key's range, or the payload's trigram index when the text is long enough for it: one
      // BitmapOr of two indexes, whatever the table's size.
      const { low, high } = uuidPrefixRange(parsed.prefix);
      const byId = Prisma.sql`id BETWEEN ${low}::uuid AND ${high}::uuid`;
      if (tooShortPatterns(parsed.payload).length) return { kind: 'idPrefix', conditions: [byId], jumpTo: null, scansPayload: false };
      return { kind: 'idOrPayload', conditions: [Prisma.sql`(${byId} OR ${Prisma.join(payloadConditions(parsed.payload), ' AND ')})`], jumpTo: null, scansPayload: true };
    }
    case 'payload': {
      if (parsed.sourceCandidate) {
        const rows = await client.$queryRaw<{ found: boolean }[]>`${planWithValues}
          SELECT EXISTS (SELECT 1 FROM intents WHERE is_replay = ANY(${replayFlags(includeReplay)}::boolean[]) AND source = ${parsed.sourceCandidate}) AS found`;
        if (rows[0]?.found) return { kind: 'source', conditions: [Prisma.sql`source = ${parsed.sourceCandidate}`], jumpTo: null, scansPayload: false };
      }
      return { kind: 'payload', conditions: payloadConditions(parsed.payload), jumpTo: null, scansPayload: true };
    }
  }
}

/** Every condition but the status: the counts use these for each status tab, the list adds the status. */
export function baseConditions(filters: IntentFilters, search: ResolvedSearch): Prisma.Sql[] {
  const parts: Prisma.Sql[] = [];
  if (!filters.includeReplay) parts.push(Prisma.sql`is_replay = false`);
  if (filters.source) parts.push(Prisma.sql`source = ${filters.source}`);
  if (filters.from) parts.push(Prisma.sql`updated_at >= ${new Date(filters.from)}::timestamptz`);
  if (filters.to) parts.push(Prisma.sql`updated_at < ${new Date(filters.to)}::timestamptz`);
  // Served by the partial index of intents still waiting (intents_waiting_idx), oldest first.
  if (filters.stuck) parts.push(Prisma.sql`status <> 'COMPLETED' AND updated_at < now() - ${stuckMinutes(filters.stuck)} * interval '1 minute'`);
  const contention = contentionCondition(filters);
  if (contention) parts.push(contention);
  parts.push(...search.conditions);
  return parts;
}

export const whereClause = (parts: Prisma.Sql[]) => (parts.length ? Prisma.sql`WHERE ${Prisma.join(parts, ' AND ')}` : Prisma.empty);

/** What `withTimeout` answers when the statement timeout cancelled the work. */
export const TIMED_OUT = Symbol('timed out');

/**
 * Runs queries in one transaction under a statement timeout (a broad text can match most rows; reading them all
 * must not take seconds). A batch, not an interactive transaction: one round of messages to the database, so the
 * bound costs almost nothing itself.
 */
export async function withTimeout<T>(timeoutMs: number, query: Prisma.PrismaPromise<T>, client: Db = db()): Promise<T | typeof TIMED_OUT> {
  try {
    const [, result] = await client.$transaction([client.$executeRawUnsafe(`SET LOCAL statement_timeout = ${Math.round(timeoutMs)}`), query]);
    return result as T;
  } catch (err) {
    if (sqlState(err) === SQLSTATE.queryCanceled) return TIMED_OUT;
    throw err;
  }
}

type Plan = { 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }[];

/**
 * The planner's estimates, per search. An estimate depends only on the table's statistics, which change when
 * ANALYZE runs (minutes apart on a busy table), not on each write; so the same search asked again — every open page
 * refreshing it, the next operator typing it — reuses it for a minute instead of planning it again in a
 * transaction of its own.
 */
const ESTIMATE_TTL_MS = 60_000;
const ESTIMATES_KEPT = 1_000;
const estimateCache = ((globalThis as unknown as { bridgeSearchEstimates?: Map<string, { rows: number; at: number }> }).bridgeSearchEstimates ??= new Map());

/** Forgets the planner's estimates (tests that change the statistics). */
export function forgetSearchEstimates(): void {
  estimateCache.clear();
}

function cachedEstimate(key: string, now: number): number | undefined {
  const hit = estimateCache.get(key);
  if (!hit) return undefined;
  if (now - hit.at < ESTIMATE_TTL_MS) return hit.rows;
  estimateCache.delete(key);
  return undefined;
}

function rememberEstimate(key: string, rows: number, now: number): void {
  if (estimateCache.size >= ESTIMATES_KEPT) estimateCache.delete(estimateCache.keys().next().value!);
  estimateCache.set(key, { rows, at: now });
}

/**
 * The planner's estimate of how many rows match (EXPLAIN: no rows read; bounded, as planning waits for locks), with
 * the counts of all intents. A known search costs one statement (the counts); a new one, one transaction.
 */
async function estimateMatches(clause: Prisma.Sql, includeReplay: boolean): Promise<{ estimate: number; all: Record<IntentStatus, number> } | null> {
  const key = JSON.stringify([clause.sql, clause.values]);
  const now = Date.now();
  const known = cachedEstimate(key, now);
  const client = await readDb();
  if (known !== undefined) return { estimate: known, all: countsFromRows(await statusCountsQuery(includeReplay, client)) };
  try {
    const [, plan, all] = await client.$transaction([
      client.$executeRawUnsafe(`SET LOCAL statement_timeout = ${COUNTS_TIMEOUT_MS}`),
      client.$queryRaw<Plan>`EXPLAIN (FORMAT JSON) SELECT 1 FROM intents ${clause}`,
      statusCountsQuery(includeReplay, client),
    ]);
    const estimate = Math.round(plan[0]['QUERY PLAN'][0].Plan['Plan Rows']);
    rememberEstimate(key, estimate, now);
    return { estimate, all: countsFromRows(all) };
  } catch (err) {
    if (sqlState(err) === SQLSTATE.queryCanceled) return null;
    throw err;
  }
}

/** An estimate of `total` matches, spread over the statuses in the proportions of `all`; said to be one. */
export function estimatedCounts(total: number, all: Record<IntentStatus, number>, cap: number): CountsAnswer {
  const sum = Object.values(all).reduce((a, b) => a + b, 0) || 1;
  const counts = zero();
  for (const s of INTENT_STATUSES) counts[s] = Math.round((total * all[s]) / sum);
  return { counts, total, exact: false, capped: false, estimated: true, cap };
}

/** Counting the first cap + 1 matches reads about cap × (rows / matches) rows: past this many matches, estimate. */
const ESTIMATE_ABOVE_CAP_TIMES = 4;

function zero(): Record<IntentStatus, number> {
  return Object.fromEntries(INTENT_STATUSES.map((s) => [s, 0])) as Record<IntentStatus, number>;
}

/**
 * Counts per status under the filters (not the status itself). Without a search, source or time range they are
 * the maintained counts (lib/counts): exact and the same cost at any size. Otherwise the matches are counted up to
 * COUNT_CAP + 1 rows (index-backed, bounded in time); past the cap the answer says "at least".
 */
export async function countsUnder(filters: IntentFilters, options: { cap?: number; search?: ResolvedSearch } = {}): Promise<CountsAnswer> {
  const cap = options.cap ?? COUNT_CAP;
  checkRange(filters.from, filters.to);
  checkContention(filters);
  const includeReplay = filters.includeReplay ?? false;
  const q = filters.q?.trim();
  if (!q && !filters.source && !filters.from && !filters.to && !filters.contention && !filters.stuck) {
    return exactAnswer(await maintainedStatusCounts({ includeReplay, client: await readDb() }));
  }
  const search = options.search ?? (await resolveSearch(q, includeReplay));
  const clause = whereClause(baseConditions(filters, search));
  const client = await readDb();
  const countQuery = client.$queryRaw<{ status: IntentStatus; n: bigint }[]>`${planWithValues}
    SELECT status::text AS status, count(*) AS n FROM (SELECT status FROM intents ${clause} LIMIT ${cap + 1}) m GROUP BY status`;
  let rows: { status: IntentStatus; n: bigint }[];
  if (search.scansPayload) {
    // A broad text (many thousands of matches) is estimated at once; a narrower one is counted, within the bound.
    const unknown: CountsAnswer = { counts: null, total: null, exact: false, capped: false, estimated: false, cap };
    const planned = await estimateMatches(clause, includeReplay);
    if (planned === null) return unknown;
    if (planned.estimate > cap * ESTIMATE_ABOVE_CAP_TIMES) return estimatedCounts(planned.estimate, planned.all, cap);
    const counted = await withTimeout(COUNTS_TIMEOUT_MS, countQuery, client);
    // The planner's estimate of a narrow search says little (it answers 1 for a text nothing contains): one it could
    // not count in time is unknown, not "about 1".
    if (counted === TIMED_OUT) return planned.estimate > cap ? estimatedCounts(planned.estimate, planned.all, cap) : unknown;
    rows = counted;
  } else {
    rows = await countQuery;
  }
  const counts = zero();
  for (const r of rows) counts[r.status] = Number(r.n);
  const seen = Object.values(counts).reduce((a, b) => a + b, 0);
  const capped = seen > cap;
  return { counts, total: capped ? cap : seen, exact: !capped, capped, estimated: false, cap };
}

export type OldestWaiting = { id: string; status: IntentStatus; since: string } | null;

/**
 * The intent that has waited longest (not COMPLETED, the oldest last change), in one status or any: the age
 * Sidekiq, Oban and River show as a queue's latency. One row from the front of an index (intents_waiting_idx, or
 * the status list index read backwards), whatever the table's size.
 */
export async function oldestWaiting(status?: IntentStatus | null): Promise<OldestWaiting> {
  const client = await readDb();
  const rows = status
    ? await client.$queryRaw<{ id: string; status: IntentStatus; since: Date }[]>`
        SELECT id::text AS id, status::text AS status, updated_at AS since FROM intents
        WHERE is_replay = false AND status = ${status}::"IntentStatus" AND status <> 'COMPLETED' ORDER BY updated_at, id LIMIT 1`
    : await client.$queryRaw<{ id: string; status: IntentStatus; since: Date }[]>`
        SELECT id::text AS id, status::text AS status, updated_at AS since FROM intents
        WHERE is_replay = false AND status <> 'COMPLETED' ORDER BY updated_at, id LIMIT 1`;
  return rows[0] ? { ...rows[0], since: rows[0].since.toISOString() } : null;
}
