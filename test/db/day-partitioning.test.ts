import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { migrate } from '@/lib/db/migrate';
import { sqlState } from '@/lib/db/sqlstate';
import { maintainPartitions, type PartitionPolicy } from '@/lib/db/partitions';
import { updateIntentStatus } from '@/lib/intents/commands';
import { VersionConflictError } from '@/lib/intents/errors';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { checkInvariants } from '@/lib/invariants/run';
import { recordLeaseEvents } from '@/lib/leases/events';
import { makeIntent, tester } from '../helpers';
import { olderDatabase } from '../older-database';
import { eventually } from '../wait';

/**
 * The tables kept for days, partitioned by day: lease events, the engine's events, per-intent outcomes and the lock
 * history (episodes with their samples, intents and storm minutes). The migrations convert a database that has
 * history in place; housekeeping creates the days ahead and retires exactly the expired days, the lock history's
 * samples and intents with their episodes. Everything runs on a database of this file's own, migrated up to the
 * migration before these two, written to, then migrated on; it is dropped at the end. Each test starts from a copy of
 * it as it was, with its history, before the conversion or just after it: the tests change which partitions exist
 * and what they hold, and none may find what another left.
 */

const MIGRATION = '20261223100000_partition_short_history_by_day';
const LOCK_MIGRATION = '20261223101000_partition_lock_history_by_day';
const DAY = 86_400_000;
const AHEAD = 7;

const older = olderDatabase('day_partitioning', { before: MIGRATION });
const oldUrl = older.url;

/**
 * Each table's rows, by the columns it had before partitioning (the samples' and intents' new episode start is left
 * out: it is derived), in a total order. Table and column names are constants of this file.
 */
const DIGESTS: Record<string, { columns: string; order: string }> = {
  lease_events: { columns: 'id, resource, backend, event, owner, holder, token, expires_at, at, actor, write_seq', order: 'id' },
  intent_engine_events: { columns: 'id, intent_id, kind, operation, actor, waited_ms, outcome, holder_pid, details, at, write_seq', order: 'id' },
  intent_outcome_minutes: { columns: 'outcome, minute, operation, intent_id, count', order: 'outcome, minute, operation, intent_id' },
  lock_episodes: {
    columns: 'id, root_pid, root_backend_start, root_xact_start, started_at, last_seen_at, ended_at, samples, peak_waiters, peak_at, peak_tree, root, waiters, locks, intent_ids, applications, write_seq',
    order: 'id',
  },
  lock_episode_samples: { columns: 'episode_id, at, waiters, tree', order: 'episode_id, at' },
  lock_episode_intents: { columns: 'intent_id, episode_id, role', order: 'intent_id, episode_id, role' },
  lock_episode_storms: { columns: 'minute, episodes, peak_waiters, applications', order: 'minute' },
};
const TABLES = Object.keys(DIGESTS);

async function fingerprint(): Promise<Record<string, { rows: number; digest: string }>> {
  const out: Record<string, { rows: number; digest: string }> = {};
  for (const [table, { columns, order }] of Object.entries(DIGESTS)) {
    const [row] = await db().$queryRawUnsafe<{ rows: number; digest: string }[]>(
      `SELECT count(*)::int AS rows, md5(coalesce(string_agg(row(${columns})::text, E'\\n' ORDER BY ${order}), '')) AS digest FROM ${table}`,
    );
    out[table] = row;
  }
  return out;
}

type PartitionRow = { name: string; fromAt: Date; toAt: Date | null };

async function partitions(table: string): Promise<PartitionRow[]> {
  return db().$queryRaw<PartitionRow[]>`SELECT partition::text AS name, from_at AS "fromAt", to_at AS "toAt" FROM "bridge_partitions"(${table}::regclass)`;
}

const days = (parts: PartitionRow[]) => parts.filter((p) => p.toAt !== null);
const catchAll = (parts: PartitionRow[]) => parts.find((p) => p.toAt === null)!;

function dayStart(t: Date, later = 0): Date {
  return new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate() + later));
}

function dayName(table: string, t: Date): string {
  return `${table}_p${t.toISOString().slice(0, 10).replace(/-/g, '_')}`;
}

const policy = (table: string, over: Partial<PartitionPolicy> = {}): PartitionPolicy => ({ table, ahead: AHEAD, retentionDays: 0, detachOnly: false, ...over });

const ago = (now: Date, days: number) => new Date(now.getTime() - days * DAY);

/** An ended episode `daysAgo` days back (or one in progress now), with two samples and its intent, as the sampler writes them before partitioning. */
async function oldEpisode(now: Date, daysAgo: number, rootPid: number, intentId: string, ended = true): Promise<bigint> {
  const start = ago(now, daysAgo);
  const tree = JSON.stringify({ tree: [{ pid: rootPid, waitingBehind: 1, children: [], hiddenChildren: 1 }], backends: [] });
  const [row] = await db().$queryRaw<{ id: bigint }[]>`
    INSERT INTO lock_episodes (root_pid, root_backend_start, root_xact_start, started_at, last_seen_at, ended_at, peak_waiters, peak_at, peak_tree, root, waiters, intent_ids, applications)
    VALUES (${rootPid}::int, ${new Date(start.getTime() - 3_600_000)}::timestamptz, ${new Date(start.getTime() - 1000)}::timestamptz, ${start}::timestamptz,
            ${new Date(start.getTime() + 2000)}::timestamptz, ${ended ? new Date(start.getTime() + 2000) : null}::timestamptz, 1, ${start}::timestamptz, ${tree}::jsonb,
            ${JSON.stringify({ pid: rootPid, intents: [intentId] })}::jsonb, '[]'::jsonb, ARRAY[${intentId}::uuid], ARRAY['psql'])
    RETURNING id`;
  await db().$executeRaw`
    INSERT INTO lock_episode_samples (episode_id, at, waiters, tree)
    VALUES (${row.id}, ${start}::timestamptz, 1, ${tree}::jsonb), (${row.id}, ${new Date(start.getTime() + 1000)}::timestamptz, 2, ${tree}::jsonb)`;
  await db().$executeRaw`INSERT INTO lock_episode_intents (intent_id, episode_id, role) VALUES (${intentId}::uuid, ${row.id}, 'root')`;
  return row.id;
}

/** History in every one of the tables, some of it days old, through the engine where it writes them. */
async function writeHistory(now: Date) {
  const a = await makeIntent('PROCESSED');
  // A version conflict: counted per intent and minute (intent_outcome_minutes) by the outcome flush.
  await expect(updateIntentStatus({ id: a.id, status: 'COMPLETED', expectedVersion: 0 }, tester)).rejects.toBeInstanceOf(VersionConflictError);
  await flushOutcomes();
  const lease = (resource: string, event: 'denied' | 'released', at?: Date) => ({ resource, event, owner: 'svc-a', actor: 'tester', token: 1, expiresAt: null, at: at?.toISOString() });
  await recordLeaseEvents('postgres', [lease('orders/A-1', 'denied', ago(now, 10)), lease('orders/A-1', 'released', ago(now, 3)), lease('orders/A-2', 'denied')]);
  for (const daysAgo of [12, 5, 0]) {
    await db().$executeRaw`
      INSERT INTO intent_engine_events (intent_id, kind, operation, waited_ms, outcome, at)
      VALUES (${a.id}::uuid, 'lock_wait', 'update_status', ${40 + daysAgo}::float8, 'acquired', ${ago(now, daysAgo)}::timestamptz)`;
    await db().$executeRaw`
      INSERT INTO intent_outcome_minutes (outcome, minute, operation, intent_id, count)
      VALUES ('lock_timeout', date_trunc('minute', ${ago(now, daysAgo)}::timestamptz), 'reevaluate', ${a.id}::uuid, ${daysAgo + 1}::bigint)
      ON CONFLICT DO NOTHING`;
  }
  await oldEpisode(now, 9, 4242, a.id);
  await oldEpisode(now, 4, 4243, a.id);
  await oldEpisode(now, 0, 4244, a.id, false);
  await db().$executeRaw`INSERT INTO lock_episode_storms (minute, episodes, peak_waiters, applications) VALUES (date_trunc('minute', ${ago(now, 9)}::timestamptz), 300, 4, ARRAY['psql'])`;
  return { intentId: a.id };
}

describe('the tables kept for days, partitioned by day', () => {
  const now = new Date();
  let before: Awaited<ReturnType<typeof fingerprint>>;
  let history: Awaited<ReturnType<typeof writeHistory>>;

  beforeAll(async () => {
    await older.open();
    history = await writeHistory(now);
    before = await fingerprint();
    await older.keep('history');
    // Converted once here for the tests of the partitioned tables: each starts from a copy of this state.
    await migrate(oldUrl);
    await older.keep('converted');
  });

  afterAll(() => older.close());

  describe('the conversion', () => {
    beforeEach(() => older.restore('history'));

    it('converts a database with history in place: every row of every table, and every invariant, as before', async () => {
      const checkedBefore = await checkInvariants(db());
      expect(checkedBefore.violationCount).toBe(0);

      const result = await migrate(oldUrl);
      expect(result.applied.slice(0, 2)).toEqual([MIGRATION, LOCK_MIGRATION]);

      const kinds = await db().$queryRaw<{ name: string; kind: string }[]>`
        SELECT relname::text AS name, relkind::text AS kind FROM pg_class WHERE relname = ANY(${TABLES}::text[]) AND relnamespace = 'public'::regnamespace ORDER BY 1`;
      expect(kinds).toEqual([...TABLES].sort().map((name) => ({ name, kind: 'p' })));
      expect(await fingerprint()).toEqual(before);
      const checkedAfter = await checkInvariants(db());
      expect(checkedAfter.violationCount).toBe(0);
      expect(checkedAfter.checks.map((c) => [c.name, 'checked' in c ? c.checked : c.skipped])).toEqual(
        checkedBefore.checks.map((c) => [c.name, 'checked' in c ? c.checked : c.skipped]),
      );

      // One partition per day from the oldest row's (or yesterday) to seven days past today, then the catch-all.
      const oldest: Record<string, number> = { lease_events: 10, intent_engine_events: 12, intent_outcome_minutes: 12, lock_episodes: 9, lock_episode_samples: 9, lock_episode_intents: 9, lock_episode_storms: 9 };
      for (const table of TABLES) {
        const expected: string[] = [];
        for (let d = dayStart(ago(now, oldest[table])); d <= dayStart(now, AHEAD); d = dayStart(d, 1)) expected.push(dayName(table, d));
        const parts = await partitions(table);
        expect(days(parts).map((p) => p.name), table).toEqual(expected);
        expect(catchAll(parts), table).toMatchObject({ name: `${table}_future`, fromAt: dayStart(now, AHEAD + 1) });
      }
      // The samples and intents carry their episode's start, and sit in the day partition of the same day as it.
      const misplaced = await db().$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM (
          SELECT s.episode_started_at, e.started_at, replace(s.tableoid::regclass::text, 'lock_episode_samples', '') AS day, replace(e.tableoid::regclass::text, 'lock_episodes', '') AS eday
          FROM lock_episode_samples s JOIN lock_episodes e ON e.id = s.episode_id
          UNION ALL
          SELECT i.episode_started_at, e.started_at, replace(i.tableoid::regclass::text, 'lock_episode_intents', ''), replace(e.tableoid::regclass::text, 'lock_episodes', '')
          FROM lock_episode_intents i JOIN lock_episodes e ON e.id = i.episode_id) x
        WHERE x.episode_started_at <> x.started_at OR x.day <> x.eday`;
      expect(misplaced[0].n).toBe(0);
    });
  });

  describe('the partitioned tables', () => {
    beforeEach(() => older.restore('converted'));

    it('keeps writing after the conversion: ids continue, the outbox still hears lease events, upserts still add up', async () => {
      const [{ maxId }] = await db().$queryRaw<{ maxId: string }[]>`SELECT max(id)::text AS "maxId" FROM lease_events`;
      const outboxBefore = await db().outboxEvent.count();
      await recordLeaseEvents('postgres', [{ resource: 'orders/A-3', event: 'released', owner: 'svc-a', actor: 'tester', token: 2, expiresAt: null }]);
      const [last] = await db().$queryRaw<{ id: string; partition: string }[]>`
        SELECT id::text, tableoid::regclass::text AS partition FROM lease_events WHERE resource = 'orders/A-3'`;
      expect(BigInt(last.id)).toBeGreaterThan(BigInt(maxId));
      expect(last.partition).toBe(dayName('lease_events', now));
      expect(await db().outboxEvent.count()).toBe(outboxBefore + 1);

      // The per-minute upsert finds its row on the partitioned table's key (which holds the minute).
      const minute = ago(now, 5);
      await db().$executeRaw`
        INSERT INTO intent_outcome_minutes (outcome, minute, operation, intent_id, count)
        VALUES ('lock_timeout', date_trunc('minute', ${minute}::timestamptz), 'reevaluate', ${history.intentId}::uuid, 1)
        ON CONFLICT (outcome, minute, operation, intent_id) DO UPDATE SET count = intent_outcome_minutes.count + EXCLUDED.count`;
      const [{ count }] = await db().$queryRaw<{ count: number }[]>`
        SELECT count::int FROM intent_outcome_minutes WHERE outcome = 'lock_timeout' AND minute = date_trunc('minute', ${minute}::timestamptz)`;
      expect(count).toBe(7);
      expect((await checkInvariants(db())).violationCount).toBe(0);
    });

    it('refuses a sample or an intent of an episode that does not exist, or with another start than its episode', async () => {
      const [episode] = await db().$queryRaw<{ id: bigint; startedAt: Date }[]>`SELECT id, started_at AS "startedAt" FROM lock_episodes ORDER BY id LIMIT 1`;
      const fails = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => sqlState(e));
      expect(await fails(db().$executeRaw`
        INSERT INTO lock_episode_samples (episode_id, episode_started_at, at, waiters, tree) VALUES (${episode.id}, ${new Date(episode.startedAt.getTime() + 1)}, now(), 1, '{}'::jsonb)`)).toBe('23503');
      expect(await fails(db().$executeRaw`
        INSERT INTO lock_episode_intents (intent_id, episode_id, episode_started_at, role) VALUES (${history.intentId}::uuid, 999999, ${episode.startedAt}, 'root')`)).toBe('23503');
    });

    it('opens at most one episode in progress per root transaction, also when two writers race', async () => {
      const [open] = await db().$queryRaw<{ rootPid: number; backendStart: Date; xactStart: Date }[]>`
        SELECT root_pid AS "rootPid", root_backend_start AS "backendStart", root_xact_start AS "xactStart" FROM lock_episodes WHERE ended_at IS NULL`;
      const insert = (client: pg.Client, rootPid: number, startedAt: Date) =>
        client.query(
          `INSERT INTO lock_episodes (root_pid, root_backend_start, root_xact_start, started_at, last_seen_at, peak_waiters, peak_at, peak_tree, root)
           VALUES ($1, $2, $3, $4, $4, 1, $4, '{}', '{}') RETURNING id`,
          [rootPid, open.backendStart, open.xactStart, startedAt],
        );
      const a = new pg.Client({ connectionString: oldUrl });
      const b = new pg.Client({ connectionString: oldUrl, application_name: 'bridge-test:second-writer' });
      await Promise.all([a.connect(), b.connect()]);
      try {
        // The same root as the episode in progress, on another day: refused (no row), though no unique index spans days.
        expect((await insert(a, open.rootPid, ago(now, 2))).rowCount).toBe(0);
        // A new root, written by two transactions at once: the second waits for the first, then sees its episode.
        await a.query('BEGIN');
        expect((await insert(a, 5151, now)).rowCount).toBe(1);
        await b.query('BEGIN');
        const second = insert(b, 5151, ago(now, 1));
        await eventually('the second writer waiting for the first', async () => {
          const rows = await db().$queryRaw<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'bridge-test:second-writer' AND wait_event_type = 'Lock'`;
          return rows[0].n === 1;
        });
        await a.query('COMMIT');
        expect((await second).rowCount).toBe(0);
        await b.query('COMMIT');
        // Once it ended, the same root transaction blocking again opens a new one.
        await db().$executeRaw`UPDATE lock_episodes SET ended_at = now() WHERE root_pid = 5151`;
        expect((await insert(a, 5151, now)).rowCount).toBe(1);
      } finally {
        await Promise.all([a.end(), b.end()]);
      }
      const [{ n }] = await db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM lock_episodes WHERE root_pid = 5151`;
      expect(n).toBe(2);
    });

    it('creates the days ahead across a day boundary, with the time moved by SQL; the episodes bring their samples and intents', async () => {
      for (const table of ['lease_events', 'lock_episodes']) {
        const last = days(await partitions(table)).at(-1)!;
        const boundary = last.toAt!;
        expect(await maintainPartitions(policy(table, { ahead: 0 }), new Date(boundary.getTime() - 60_000))).toMatchObject({ ran: true, created: [], retired: [] });
        const report = await maintainPartitions(policy(table, { ahead: 1 }), new Date(boundary.getTime() + 1000));
        const made = [boundary, dayStart(boundary, 1)];
        const expected = table === 'lock_episodes' ? ['lock_episode_samples', 'lock_episode_intents', 'lock_episodes'] : [table];
        expect([...report.created].sort()).toEqual(expected.flatMap((t) => made.map((d) => dayName(t, d))).sort());
        for (const t of expected) expect(catchAll(await partitions(t)).fromAt, t).toEqual(dayStart(boundary, 2));
        expect((await maintainPartitions(policy(table, { ahead: 1 }), new Date(boundary.getTime() + 1000))).created).toEqual([]);
      }
      const [{ partition }] = await db().$queryRaw<{ partition: string }[]>`
        INSERT INTO lease_events (resource, backend, event, owner, token, at) VALUES ('orders/A-9', 'postgres', 'refreshed', 'svc-a', 3, ${dayStart(now, AHEAD + 2)}::timestamptz)
        RETURNING tableoid::regclass::text AS partition`;
      expect(partition).toBe(dayName('lease_events', dayStart(now, AHEAD + 2)));
    });

    it('retires exactly the expired days: the samples and intents with their episodes, only detached when asked, else dropped', async () => {
      const family = ['lock_episodes', 'lock_episode_samples', 'lock_episode_intents'];
      const parts = days(await partitions('lock_episodes'));
      // With one day kept, at a day past the end of the fourth day: the first four days expire, nothing after them.
      const fourth = parts[3];
      const at = new Date(fourth.toAt!.getTime() + DAY);
      const expired = parts.slice(0, 4);
      const rowsOf = async (table: string, names: string[]) =>
        (await db().$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${table} WHERE tableoid::regclass::text = ANY($1::text[])`, names))[0].n;
      const expiredRows = Object.fromEntries(
        await Promise.all(family.map(async (t) => [t, await rowsOf(t, expired.map((p) => p.name.replace('lock_episodes', t)))] as const)),
      );
      expect(expiredRows.lock_episodes).toBeGreaterThan(0);
      const total = await fingerprint();

      const detached = await maintainPartitions(policy('lock_episodes', { ahead: 0, retentionDays: 1, detachOnly: true }), at);
      const names = family.flatMap((t) => expired.map((p) => p.name.replace('lock_episodes', t)));
      expect([...detached.retired].sort()).toEqual([...names].sort());
      const after = await fingerprint();
      for (const t of family) expect(after[t].rows, t).toBe(total[t].rows - expiredRows[t]);
      // Detached, each is a table of its own with its rows and no foreign key into the history any more.
      for (const name of names) {
        const [row] = await db().$queryRaw<{ partition: boolean; fks: number }[]>`
          SELECT relispartition AS partition, (SELECT count(*)::int FROM pg_constraint WHERE conrelid = ${name}::regclass AND contype = 'f') AS fks
          FROM pg_class WHERE oid = ${name}::regclass`;
        expect(row, name).toEqual({ partition: false, fks: 0 });
      }
      const kept = (await partitions('lock_episodes')).map((p) => p.name);
      expect(kept).toEqual(expect.arrayContaining(days(parts).slice(4).map((p) => p.name)));

      // A day later with drop: the fifth day goes, whole, with its samples and intents.
      const fifth = parts[4];
      const dropped = await maintainPartitions(policy('lock_episodes', { ahead: 0, retentionDays: 1 }), new Date(fifth.toAt!.getTime() + DAY));
      expect([...dropped.retired].sort()).toEqual(family.map((t) => fifth.name.replace('lock_episodes', t)).sort());
      for (const name of dropped.retired) {
        const [{ gone }] = await db().$queryRaw<{ gone: boolean }[]>`SELECT to_regclass(${name}) IS NULL AS gone`;
        expect(gone, name).toBe(true);
      }

      // A table without references: the same rule, alone.
      const leaseDays = days(await partitions('lease_events'));
      const leaseReport = await maintainPartitions(policy('lease_events', { ahead: 0, retentionDays: 2 }), new Date(leaseDays[1].toAt!.getTime() + 2 * DAY));
      expect(leaseReport.retired).toEqual([leaseDays[0].name, leaseDays[1].name]);
    });

    it("prunes the console's reads that are bounded in time to the days they need", async () => {
      const scanned = async (table: string, query: Promise<{ 'QUERY PLAN': string }[]>) => {
        const text = (await query).map((r) => r['QUERY PLAN']).join('\n');
        return { text, partitions: [...new Set([...text.matchAll(new RegExp(`on (${table}_(?:p\\d{4}_\\d{2}_\\d{2}|future))`, 'g'))].map((m) => m[1]))] };
      };
      // Episodes worth pruning: a few hundred ended ones every day, with statistics that say so. On the handful the
      // conversion leaves, reading them all and sorting them is the cheapest plan, and the right one.
      await db().$executeRaw`
        INSERT INTO lock_episodes (root_pid, root_backend_start, root_xact_start, started_at, last_seen_at, ended_at, peak_waiters, peak_at, peak_tree, root)
        SELECT 100000 + n, d.from_at, d.from_at, d.from_at + n * interval '1 minute', d.from_at + n * interval '1 minute',
               d.from_at + n * interval '1 minute', 1, d.from_at + n * interval '1 minute', '{}'::jsonb, '{}'::jsonb
        FROM "bridge_partitions"('lock_episodes'::regclass) d, generate_series(1, 200) n
        WHERE d.to_at IS NOT NULL`;
      await db().$executeRaw`ANALYZE lock_episodes`;
      const today = dayName('lock_episodes', now);
      const yesterday = dayStart(now, -1);

      // The Intents page's contention filter (its minutes).
      const contention = await scanned('intent_outcome_minutes', db().$queryRaw`
        EXPLAIN SELECT intent_id FROM intent_outcome_minutes
        WHERE outcome = ANY(ARRAY['lock_timeout']) AND minute >= date_trunc('minute', ${yesterday}::timestamptz) AND minute < ${dayStart(now)}::timestamptz`);
      expect(contention.partitions).toEqual([dayName('intent_outcome_minutes', yesterday)]);

      // The Locks page's episodes: the first page is read newest day first and stops when full (no merge, no sort) …
      const first = await scanned('lock_episodes', db().$queryRaw`EXPLAIN SELECT id FROM lock_episodes e ORDER BY e.started_at DESC, e.id DESC LIMIT 51`);
      expect(first.text).not.toMatch(/Merge Append|Sort/);
      // … a later page's cursor and a `to` bound prune to the days up to them …
      const cursor = await scanned('lock_episodes', db().$queryRaw`
        EXPLAIN SELECT id FROM lock_episodes e WHERE e.started_at <= ${yesterday}::timestamptz AND (e.started_at, e.id) < (${yesterday}::timestamptz, 1::bigint)
        ORDER BY e.started_at DESC, e.id DESC LIMIT 51`);
      expect(cursor.partitions).not.toContain(today);
      expect(cursor.partitions.every((p) => p <= dayName('lock_episodes', yesterday))).toBe(true);
      // … an episode's samples are read from its own day …
      const samples = await scanned('lock_episode_samples', db().$queryRaw`
        EXPLAIN SELECT at FROM lock_episode_samples s WHERE s.episode_id = 1 AND s.episode_started_at = ${now}::timestamptz ORDER BY at`);
      expect(samples.partitions).toEqual([dayName('lock_episode_samples', now)]);
      // … and the storms of a time window from its days.
      const storms = await scanned('lock_episode_storms', db().$queryRaw`
        EXPLAIN SELECT minute FROM lock_episode_storms WHERE minute >= ${yesterday}::timestamptz AND minute <= ${dayStart(now)}::timestamptz ORDER BY minute DESC LIMIT 100`);
      expect([...storms.partitions].sort()).toEqual([dayName('lock_episode_storms', yesterday), dayName('lock_episode_storms', now)].sort());
      // A replay run's episodes: the run's time.
      const run = await scanned('lock_episodes', db().$queryRaw`
        EXPLAIN SELECT id FROM lock_episodes e WHERE e.started_at >= ${new Date(now.getTime() - 60_000)}::timestamptz AND e.started_at <= ${now}::timestamptz`);
      expect(run.partitions.length).toBeLessThanOrEqual(2);
      expect(run.partitions).toContain(today);
    });

    it('lets one instance at a time maintain a table: the others skip', async () => {
      const holder = new pg.Client({ connectionString: oldUrl });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT pg_advisory_xact_lock(hashtext('bridge_partitions'), 'lock_episodes'::regclass::oid::int)`);
        expect(await maintainPartitions(policy('lock_episodes'), now)).toEqual({ table: 'lock_episodes', ran: false, created: [], retired: [] });
        await holder.query('ROLLBACK');
        expect((await maintainPartitions(policy('lock_episodes'), now)).ran).toBe(true);
      } finally {
        await holder.end();
      }
    });
  });
});
