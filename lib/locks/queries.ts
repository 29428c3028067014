import { z } from 'zod';
import { wholeNumber } from '@/lib/shared/strict';
import { db, type Db, type Tx } from '@/lib/db/client';
import { pressureReason } from '@/lib/db/sqlstate';
import { DatabaseUnderPressureError, ValidationError, VIEW_RETRY_AFTER_SECONDS } from '@/lib/shared/errors';
import { foldIndexLocks } from './fold';
import { buildBlockingTree, DEFAULT_TREE_CAPS, resolveIntents } from './tree';
import type { Backend, LockRow, LocksSnapshot } from './types';

/**
 * The Locks page's view of the database: every lock from pg_locks joined with pg_stat_activity, the blocking
 * tree from pg_blocking_pids, and the intent each backend is about. It runs while the database may be in
 * trouble, so it protects itself: one short transaction under `lock_timeout = 100ms` and
 * `statement_timeout = 1s`, a short wait for a pooled connection, and results capped at the top N plus a summary
 * of what was left out. When it times out it raises DatabaseUnderPressureError and the page backs off.
 */

export const LOCK_SNAPSHOT_LIMITS = { lockTimeoutMs: 100, statementTimeoutMs: 1000, maxWaitMs: 1000, transactionMs: 3000 } as const;
/**
 * The console's own snapshot transactions carry this label and are left out of what they show: another
 * request's snapshot (a second tab, the unblock panel) is the page looking at itself, not a session of interest.
 */
export const SNAPSHOT_LABEL = 'bridge:locks-snapshot';

/**
 * The lock history's sampler (lib/locks/history/sampler.ts): the console watching the database. Its short
 * transactions (recording what it saw) and their locks are left out of what the Locks page shows unless they block or
 * wait for someone, or every session was asked for: otherwise an on-call reading the page finds the console's own
 * bookkeeping among the locks they are looking into.
 */
export const SAMPLER_LABEL = 'bridge:lock-sampler';

/**
 * The lock history's sampler leads by holding this session-level advisory lock (a two-key lock: namespace, key);
 * the namespace is apart from the actor locks' (bridge_actor_space) and the pipeline's.
 */
export const SAMPLER_LOCK = { space: 0x6c6b6873, key: 1 } as const; // "lkhs"
/** Backends fetched at most (waiters and blockers first): the tree and the impact are computed over these. */
const MAX_BACKENDS = 1000;

export const snapshotOptionsSchema = z.object({
  limit: wholeNumber({ min: 1, max: 1000 }).default(100),
  /** Every client session of the database, idle ones included (not only those in transactions). */
  all: z.preprocess((v) => v, z.enum(['true', 'false'], { error: 'must be true or false' }).default('false')),
});
export type SnapshotOptions = z.input<typeof snapshotOptionsSchema>;

type BackendRow = {
  pid: number;
  applicationName: string | null;
  actor: string | null;
  user: string | null;
  clientAddr: string | null;
  backendType: string | null;
  state: string | null;
  query: string | null;
  xactStart: Date | null;
  queryStart: Date | null;
  backendStart: Date | null;
  stateChange: Date | null;
  waitEventType: string | null;
  waitEvent: string | null;
  waitingSince: Date | null;
  blockedBy: number[] | null;
  total: bigint;
};

const iso = (d: Date | null) => (d ? d.toISOString() : null);

async function setSnapshotLimits(tx: Tx): Promise<void> {
  // SET LOCAL: gone at commit, so the pooled connection goes back as it came.
  await tx.$executeRaw`SET LOCAL lock_timeout = '100ms'`;
  await tx.$executeRaw`SET LOCAL statement_timeout = '1s'`;
  await tx.$queryRaw`SELECT set_config('application_name', ${SNAPSHOT_LABEL}, true)`;
}

/**
 * Client backends of this database that wait, block, or are in a transaction (the console's own snapshot
 * excluded): waiters and blockers first, then the oldest transactions. pg_blocking_pids is asked only for backends
 * that wait for a lock, since it takes the lock manager's partition locks.
 */
async function readBackends(tx: Tx, allSessions = false): Promise<{ backends: Omit<Backend, 'operation' | 'intents'>[]; total: number }> {
  const rows = await tx.$queryRaw<BackendRow[]>`
    WITH a AS MATERIALIZED (
      SELECT a.*, CASE WHEN a.wait_event_type = 'Lock' THEN pg_blocking_pids(a.pid) ELSE '{}'::int[] END AS blocked_by
      FROM pg_stat_activity a
      WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.application_name IS DISTINCT FROM ${SNAPSHOT_LABEL}
    ), blockers AS (SELECT DISTINCT unnest(blocked_by) AS pid FROM a),
    relevant AS (
      SELECT a.*, (a.pid IN (SELECT pid FROM blockers)) AS is_blocker FROM a
      WHERE (a.xact_start IS NOT NULL OR cardinality(a.blocked_by) > 0 OR a.pid IN (SELECT pid FROM blockers)
             OR (${allSessions} AND a.backend_type = 'client backend'))
        AND (a.application_name IS DISTINCT FROM ${SAMPLER_LABEL} OR ${allSessions} OR cardinality(a.blocked_by) > 0 OR a.pid IN (SELECT pid FROM blockers))
    ),
    -- The engine's backends name the user they act for with a shared advisory lock (prisma/functions/00_helpers.sql):
    -- read pg_locks once for all of them.
    actors AS MATERIALIZED (
      SELECT l.pid, string_agg(DISTINCT n.name, ' or ') AS name
      FROM pg_locks l JOIN backend_actors n ON n.key = l.objid::bigint
      WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted AND l.classid::bigint = bridge_actor_space()
      GROUP BY l.pid
    )
    SELECT r.pid, r.application_name AS "applicationName", ac.name AS actor, r.usename::text AS "user", r.client_addr::text AS "clientAddr",
           r.backend_type AS "backendType", r.state, left(r.query, 1000) AS query, r.xact_start AS "xactStart",
           r.query_start AS "queryStart", r.backend_start AS "backendStart", r.state_change AS "stateChange", r.wait_event_type AS "waitEventType",
           r.wait_event AS "waitEvent",
           (SELECT min(l.waitstart) FROM pg_locks l WHERE l.pid = r.pid AND NOT l.granted) AS "waitingSince",
           r.blocked_by AS "blockedBy", count(*) OVER () AS total
    FROM relevant r LEFT JOIN actors ac ON ac.pid = r.pid
    ORDER BY (cardinality(r.blocked_by) > 0 OR r.is_blocker) DESC, r.xact_start ASC NULLS LAST, r.backend_start, r.pid
    LIMIT ${MAX_BACKENDS}`;
  return {
    total: rows.length ? Number(rows[0].total) : 0,
    backends: rows.map((r) => ({
      pid: r.pid,
      applicationName: r.applicationName,
      actor: r.actor,
      user: r.user,
      clientAddr: r.clientAddr,
      backendType: r.backendType,
      state: r.state,
      query: r.query,
      xactStart: iso(r.xactStart),
      queryStart: iso(r.queryStart),
      backendStart: iso(r.backendStart),
      stateChange: iso(r.stateChange),
      waitEventType: r.waitEventType,
      waitEvent: r.waitEvent,
      waitingSince: iso(r.waitingSince),
      blockedBy: [...new Set(r.blockedBy ?? [])],
    })),
  };
}

/**
 * Tuple locks on `intents` name a row by page and item; `ctid = '(page,item)'` finds it (a TID scan, no table
 * scan). That is how a backend the engine did not label — a person's psql session — is tied to an intent.
 */
async function readIntentRowLocks(tx: Tx): Promise<{ pid: number; page: number; tuple: number; intentId: string }[]> {
  const locks = await tx.$queryRaw<{ pid: number; page: number; tuple: number }[]>`
    SELECT l.pid, l.page, l.tuple::int AS tuple
    FROM pg_locks l
    WHERE l.locktype = 'tuple' AND l.pid IS NOT NULL AND l.pid <> pg_backend_pid()
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.relation = to_regclass('public.intents')
    LIMIT ${MAX_BACKENDS}`;
  if (!locks.length) return [];
  const tids = [...new Set(locks.map((l) => `(${l.page},${l.tuple})`))];
  const rows = await tx.$queryRaw<{ ctid: string; id: string }[]>`
    SELECT ctid::text AS ctid, id::text AS id FROM intents WHERE ctid = ANY(${tids}::text[]::tid[])`;
  const byTid = new Map(rows.map((r) => [r.ctid, r.id]));
  return locks.flatMap((l) => {
    const intentId = byTid.get(`(${l.page},${l.tuple})`);
    return intentId ? [{ ...l, intentId }] : [];
  });
}

const lockJson = z.object({
  pid: z.number().int(),
  lockType: z.string(),
  mode: z.string(),
  granted: z.boolean(),
  fastpath: z.boolean(),
  relation: z.string().nullable(),
  indexOf: z.string().nullable(),
  page: z.number().int().nullable(),
  tuple: z.number().int().nullable(),
  transactionId: z.string().nullable(),
  virtualXid: z.string().nullable(),
  objectId: z.string().nullable(),
  waitingSince: z.string().nullable(),
  applicationName: z.string().nullable(),
  state: z.string().nullable(),
  query: z.string().nullable(),
  xactStart: z.string().nullable(),
});
const locksResult = z.object({
  total: z.number().int(),
  waiting: z.number().int(),
  shown: z.array(lockJson),
  hidden: z.array(z.object({ lockType: z.string(), granted: z.boolean(), count: z.number().int() })),
});

const toIso = (s: string | null) => (s ? new Date(s).toISOString() : null);

/**
 * Every lock of this database's backends (and transaction-id locks, which belong to no database), from one read
 * of pg_locks: the top `limit` — waits first, then the blockers' locks, then row and transaction locks before
 * relation locks, oldest transaction first — and a count per lock type of the rest.
 */
async function readLocks(tx: Tx, blockers: number[], limit: number, allSessions: boolean) {
  const [row] = await tx.$queryRaw<{ result: unknown }[]>`
    WITH l AS MATERIALIZED (
      SELECT l.pid, l.locktype, l.mode, l.granted, l.fastpath, l.waitstart, l.page, l.tuple,
             CASE WHEN l.relation IS NOT NULL THEN l.relation::regclass::text END AS relation,
             CASE WHEN l.relation IS NOT NULL THEN (SELECT x.indrelid::regclass::text FROM pg_index x WHERE x.indexrelid = l.relation) END AS index_of,
             l.transactionid::text AS xid, l.virtualxid,
             CASE WHEN l.objid IS NOT NULL THEN concat_ws(':', l.classid, l.objid, l.objsubid) END AS object_id,
             a.application_name, a.state, left(a.query, 500) AS query, a.xact_start
      FROM pg_locks l
      LEFT JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.pid IS NOT NULL AND l.pid <> pg_backend_pid()
        AND (l.database IS NULL OR l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
        AND (a.datname IS NULL OR a.datname = current_database())
        AND a.application_name IS DISTINCT FROM ${SNAPSHOT_LABEL}
        AND (a.application_name IS DISTINCT FROM ${SAMPLER_LABEL} OR ${allSessions} OR NOT l.granted OR l.pid = ANY(${blockers}::int[]))
        -- Actor locks name a backend's user (shown with the session), and waiter places count who waits on a held
        -- row (docs/LOCKING.md), only ever tried: neither blocks anyone, so neither is a lock of interest.
        AND NOT (l.locktype = 'advisory' AND l.objsubid = 2 AND l.classid::bigint IN (bridge_actor_space(), bridge_waiter_space()))
        -- Nor is the lock history's leadership: the console watching itself, taken only with pg_try_advisory_lock.
        AND NOT (l.locktype = 'advisory' AND l.objsubid = 2 AND l.classid::bigint = ${SAMPLER_LOCK.space} AND l.objid::bigint = ${SAMPLER_LOCK.key})
    ), ranked AS (
      SELECT l.*, row_number() OVER (
        ORDER BY l.granted,
                 (l.pid = ANY(${blockers}::int[])) DESC,
                 CASE l.locktype WHEN 'transactionid' THEN 0 WHEN 'tuple' THEN 1 WHEN 'advisory' THEN 2 WHEN 'relation' THEN 3
                                 WHEN 'virtualxid' THEN 5 ELSE 4 END,
                 l.xact_start NULLS LAST, l.pid, l.relation NULLS LAST, l.mode) AS rn
      FROM l
    )
    SELECT json_build_object(
      'total', (SELECT count(*) FROM ranked),
      'waiting', (SELECT count(*) FROM ranked WHERE NOT granted),
      'shown', (SELECT coalesce(json_agg(json_build_object(
                  'pid', pid, 'lockType', locktype, 'mode', mode, 'granted', granted, 'fastpath', fastpath,
                  'relation', relation, 'indexOf', index_of, 'page', page, 'tuple', tuple, 'transactionId', xid, 'virtualXid', virtualxid,
                  'objectId', object_id, 'waitingSince', waitstart, 'applicationName', application_name, 'state', state,
                  'query', query, 'xactStart', xact_start) ORDER BY rn), '[]'::json)
                FROM ranked WHERE rn <= ${limit}),
      'hidden', (SELECT coalesce(json_agg(json_build_object('lockType', locktype, 'granted', granted, 'count', n)
                                  ORDER BY granted, n DESC), '[]'::json)
                 FROM (SELECT locktype, granted, count(*)::int AS n FROM ranked WHERE rn > ${limit} GROUP BY 1, 2) h)
    ) AS result`;
  const parsed = locksResult.parse(row.result);
  return {
    ...parsed,
    shown: parsed.shown.map((l) => ({ ...l, waitingSince: toIso(l.waitingSince), xactStart: toIso(l.xactStart) })),
  };
}

function classify(err: unknown): never {
  const reason = pressureReason(err);
  if (reason) throw new DatabaseUnderPressureError(reason, VIEW_RETRY_AFTER_SECONDS);
  throw err;
}

/**
 * Runs `fn` in a short, self-limiting transaction for reading lock state; timeouts become DatabaseUnderPressureError.
 * `client` is the engine's pool unless given (the lock history's sampler brings its own connection).
 */
export async function withSnapshotTransaction<T>(fn: (tx: Tx) => Promise<T>, client: Db = db()): Promise<T> {
  try {
    return await client.$transaction(
      async (tx) => {
        await setSnapshotLimits(tx);
        return fn(tx);
      },
      { maxWait: LOCK_SNAPSHOT_LIMITS.maxWaitMs, timeout: LOCK_SNAPSHOT_LIMITS.transactionMs },
    );
  } catch (err) {
    classify(err);
  }
}

/** Backends with their blocking pids and resolved intents, and the database clock: shared by the page and unblocking. */
export async function readResolvedBackends(tx: Tx, allSessions = false) {
  const [{ now }] = await tx.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS now`;
  const { backends, total } = await readBackends(tx, allSessions);
  const rowLocks = await readIntentRowLocks(tx);
  return { backends: resolveIntents(backends, rowLocks) as Backend[], total, now, rowLocks };
}

export async function takeLocksSnapshot(options: SnapshotOptions = {}): Promise<LocksSnapshot> {
  const parsedOptions = snapshotOptionsSchema.safeParse(options);
  if (!parsedOptions.success) {
    throw new ValidationError(parsedOptions.error.issues.map((i) => ({ field: i.path.join('.') || 'query', message: i.message })));
  }
  const { limit } = parsedOptions.data;
  const allSessions = parsedOptions.data.all === 'true';
  const started = performance.now();
  const { resolved, locks } = await withSnapshotTransaction(async (tx) => {
    const resolved = await readResolvedBackends(tx, allSessions);
    const blockers = [...new Set(resolved.backends.flatMap((b) => b.blockedBy))];
    return { resolved, locks: await readLocks(tx, blockers, limit, allSessions) };
  });
  const rowLocks = resolved.rowLocks;
  const tookMs = Math.round(performance.now() - started);

  const rowIntent = new Map(rowLocks.map((r) => [`${r.page},${r.tuple}`, r.intentId]));
  const lockRows: LockRow[] = foldIndexLocks(
    locks.shown.map((l) => ({
      ...l,
      indexes: [],
      intentId: l.lockType === 'tuple' && l.relation === 'intents' ? (rowIntent.get(`${l.page},${l.tuple}`) ?? null) : null,
    })),
  );

  // The tree is computed over every backend read; what is shown is capped.
  const { tree, hiddenRoots } = buildBlockingTree(resolved.backends, DEFAULT_TREE_CAPS);
  const inTree = new Set<number>();
  const walk = (nodes: LocksSnapshot['tree']) => nodes.forEach((n) => (inTree.add(n.pid), walk(n.children)));
  walk(tree);
  const lockPids = new Set(lockRows.map((l) => l.pid));
  const relevant = resolved.backends.filter((b) => inTree.has(b.pid) || lockPids.has(b.pid));
  const others = resolved.backends.filter((b) => !inTree.has(b.pid) && !lockPids.has(b.pid)).slice(0, Math.max(0, limit - relevant.length));
  const backends = [...relevant, ...others];

  return {
    takenAt: resolved.now.toISOString(),
    tookMs,
    limit,
    locks: lockRows,
    summary: {
      total: locks.total,
      waiting: locks.waiting,
      // Counted in locks, before a table's index locks are folded into its row.
      shown: locks.shown.length,
      hidden: locks.total - locks.shown.length,
      hiddenByType: locks.hidden,
    },
    backends,
    allSessions,
    backendsHidden: resolved.total - backends.length,
    tree,
    treeHidden: hiddenRoots,
  };
}
