import pg from 'pg';
import { afterAll } from 'vitest';
import { db } from '@/lib/db/client';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { waitingTogether } from '@/lib/intents/together';
import { resetDatabase } from './helpers';
import { eventually } from './wait';

/**
 * Barriers for the engine's integration tests: plain connections that hold row locks, advisory locks and open
 * transactions at known points, and a monitor that waits until given backends are queued on a lock. Interleavings
 * are forced with these, never with sleeps.
 *
 * The monitor has its own connection: when a test fills the engine's pool with waiters, a barrier that needed a
 * pool connection to look at pg_stat_activity would wait for ever.
 */
let monitor: pg.Client | undefined;
const opened = new Set<pg.Client>();

async function monitorClient(): Promise<pg.Client> {
  if (!monitor) {
    monitor = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'bridge-test:monitor' });
    await monitor.connect();
  }
  return monitor;
}

export type WaiterFilter = {
  /** Only backends whose application_name starts with this (the engine labels its transactions `bridge:<operation>:<intent>`). */
  application?: string;
  /** Only these backends. */
  pids?: number[];
};

/** How many backends of this database wait for a lock (row, tuple, transaction or advisory), as the filter says. */
export async function lockWaiters(filter: WaiterFilter = {}): Promise<number> {
  const client = await monitorClient();
  const { rows } = await client.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
       AND ($1::text IS NULL OR application_name LIKE $1 || '%')
       AND ($2::int[] IS NULL OR pid = ANY($2::int[]))`,
    [filter.application ?? null, filter.pids ?? null],
  );
  return Number(rows[0].n);
}

/** Resolves once at least `count` matching backends wait for a lock: the barrier that orders an interleaving. */
export async function waitForWaiters(count: number, filter: WaiterFilter = {}): Promise<void> {
  await eventually(`${count} lock waiter(s) ${JSON.stringify(filter)}`, async () => (await lockWaiters(filter)) >= count, { everyMs: 3 });
}

/**
 * Resolves once a backend labelled `application…` has waited on a lock for at least `ms`, by the database's own
 * clock: how a test makes a wait long enough to be recorded without guessing how long to sleep.
 */
export async function waitForLockWaitOf(application: string, ms: number): Promise<void> {
  const client = await monitorClient();
  await eventually(
    `a lock wait of ${ms} ms by ${application}`,
    async () => {
      const { rows } = await client.query<{ waited: number | null }>(
        `SELECT max(extract(epoch FROM clock_timestamp() - query_start) * 1000)::float8 AS waited
         FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND application_name LIKE $1 || '%'`,
        [application],
      );
      return (rows[0].waited ?? 0) >= ms;
    },
    { everyMs: 3 },
  );
}

/**
 * Resolves once `count` corrections of the intent wait: backends queued on a lock under the intent's correction
 * label, plus corrections waiting in this process behind its call at the database (lib/intents/together.ts sends
 * those together once that call returns). The barrier for "all of them are queued" whatever the strategy.
 */
export async function waitForCorrectionsWaiting(intentId: string, count: number): Promise<void> {
  await eventually(
    `${count} corrections of ${intentId} to wait`,
    async () => (await lockWaiters({ application: `bridge:reevaluate:${intentId}` })) + waitingTogether(intentId) >= count,
    { everyMs: 3 },
  );
}

export type Session = pg.Client & { pid: number };

/** A plain connection (not the engine's pool), closed after the file's tests. */
export async function session(applicationName = 'bridge-test:holder'): Promise<Session> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: applicationName });
  await client.connect();
  opened.add(client);
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return Object.assign(client, { pid: rows[0].pid });
}

export async function closeSession(client: pg.Client): Promise<void> {
  opened.delete(client);
  await client.end().catch(() => undefined);
}

export type RowLockHolder = {
  session: Session;
  /** Ends the holder's transaction with COMMIT (its changes, if any, become visible). */
  commit: () => Promise<void>;
  /** Ends the holder's transaction with ROLLBACK. */
  release: () => Promise<void>;
};

/**
 * Opens a transaction on its own connection and takes `FOR UPDATE` row locks on these intents, in the given order.
 * `applicationName` is what the engine's lock error will report as the holder (`bridge:<what>:<intent id>` is
 * recognised as one of ours).
 */
export async function holdRowLocks(ids: string[], applicationName = 'bridge-test:holder'): Promise<RowLockHolder> {
  const s = await session(applicationName);
  await s.query('BEGIN');
  for (const id of ids) await s.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [id]);
  return {
    session: s,
    commit: async () => {
      await s.query('COMMIT');
      await closeSession(s);
    },
    release: async () => {
      await s.query('ROLLBACK');
      await closeSession(s);
    },
  };
}

/** Starts something that will block; a rejection is kept for the test to inspect, never reported as unhandled. */
export function started<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/** Settles a promise into its value or its error, for asserting on many concurrent outcomes at once. */
export async function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A one-shot gate: JS code inside a transaction awaits `wait`, the test calls `open`. */
export function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Flushes buffered outcome counts first, so counts of a previous test never land in the next one's tables. */
export async function resetEngine(): Promise<void> {
  await flushOutcomes();
  await resetDatabase();
}

/** Outcome counts persisted so far (flushed first), summed over minutes: `operation/outcome` and `operation/outcome/transition`. */
export async function persistedOutcomes(): Promise<Record<string, number>> {
  await flushOutcomes();
  const rows = await db().$queryRaw<{ operation: string; outcome: string; transition: string; n: bigint }[]>`
    SELECT operation, outcome, transition, sum(count) AS n FROM outcome_counts GROUP BY operation, outcome, transition`;
  const result: Record<string, number> = {};
  for (const r of rows) {
    const plain = `${r.operation}/${r.outcome}`;
    result[plain] = (result[plain] ?? 0) + Number(r.n);
    if (r.transition) result[`${plain}/${r.transition}`] = Number(r.n);
  }
  return result;
}

/** Forgets persisted and buffered outcome counts, so a test counts only what it does itself. */
export async function clearOutcomes(): Promise<void> {
  await flushOutcomes();
  await db().$executeRaw`TRUNCATE outcome_counts, lock_wait_buckets, lock_wait_timeouts, intent_outcome_minutes`;
}

/**
 * Everything the engine writes, summarised: row counts per table and a digest of every intent's status, version
 * and payload. Equal fingerprints before and after a refused request mean it changed nothing.
 */
export async function dbFingerprint() {
  const rows = await db().$queryRaw<Record<string, bigint | string | null>[]>`
    SELECT (SELECT count(*) FROM intents) AS intents,
           (SELECT count(*) FROM corrections) AS corrections,
           (SELECT count(*) FROM audit_events) AS audit_events,
           (SELECT count(*) FROM conflict_events) AS conflict_events,
           (SELECT count(*) FROM idempotency_records) AS idempotency_records,
           (SELECT count(*) FROM deadlock_events) AS deadlock_events,
           (SELECT md5(coalesce(string_agg(id::text || status::text || version::text || payload::text || updated_at::text, ',' ORDER BY id), ''))
              FROM intents) AS intents_digest`;
  return Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v]));
}

afterAll(async () => {
  for (const client of [...opened]) await closeSession(client);
  await monitor?.end().catch(() => undefined);
  monitor = undefined;
});
