import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { migrate } from '@/lib/db/migrate';
import { maintainPartitions, type PartitionPolicy } from '@/lib/db/partitions';
import { sqlState } from '@/lib/db/sqlstate';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { VersionConflictError } from '@/lib/intents/errors';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { checkInvariants } from '@/lib/invariants/run';
import { runPipeline } from '@/lib/pipeline/run';
import { makeIntent, tester } from '../helpers';
import { olderDatabase } from '../older-database';

/**
 * audit_events partitioned by month: the migration converts a database that has history in place, and housekeeping
 * creates months ahead, moves rows the catch-all partition took into their months and retires expired months.
 * Everything here runs on a database of this file's own, migrated up to the migration before the partitioning one:
 * the engine writes history into it, then the partitioning migration runs on it; it is dropped at the end. Each test
 * starts from a copy of it as it was, with its history, before the conversion or just after it: the tests change
 * which partitions exist and what they hold, and none may find what another left.
 */

const MIGRATION = '20261220093100_partition_audit_events_by_month';
/** Later migrations whose tables the current database functions read (the status function looks for open waits). */
const READ_BY_TODAYS_FUNCTIONS = ['20261222100000_pipeline_waits'];
const DAY = 86_400_000;

const older = olderDatabase('partitioning', { before: MIGRATION, alsoApply: READ_BY_TODAYS_FUNCTIONS });
const oldUrl = older.url;

/** Everything audit_events holds, as one digest (every column of every row, in id order), and what is around it. */
async function fingerprint() {
  const [row] = await db().$queryRaw<{ rows: number; digest: string; maxId: string; outbox: number }[]>`
    SELECT (SELECT count(*)::int FROM audit_events) AS rows,
           (SELECT md5(coalesce(string_agg(row_to_json(a)::text, E'\n' ORDER BY a.id), '')) FROM audit_events a) AS digest,
           (SELECT coalesce(max(id), 0)::text FROM audit_events) AS "maxId",
           (SELECT count(*)::int FROM outbox_events) AS outbox`;
  return row;
}

/** A partition; the catch-all after the last month has no end (toAt null). */
type PartitionRow = { name: string; fromAt: Date; toAt: Date | null; rows: number };

async function partitions(): Promise<PartitionRow[]> {
  const parts = await db().$queryRaw<Omit<PartitionRow, 'rows'>[]>`
    SELECT partition::text AS name, from_at AS "fromAt", to_at AS "toAt" FROM "bridge_partitions"('audit_events'::regclass)`;
  const counts = await db().$queryRaw<{ name: string; n: number }[]>`
    SELECT tableoid::regclass::text AS name, count(*)::int AS n FROM audit_events GROUP BY 1`;
  return parts.map((p) => ({ ...p, rows: counts.find((c) => c.name === p.name)?.n ?? 0 }));
}

function monthName(t: Date): string {
  return `audit_events_p${t.getUTCFullYear()}_${String(t.getUTCMonth() + 1).padStart(2, '0')}`;
}

function monthStart(t: Date, later = 0): Date {
  return new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + later, 1));
}

const months = (parts: PartitionRow[]) => parts.filter((p) => p.toAt !== null);
const catchAll = (parts: PartitionRow[]) => parts.find((p) => p.toAt === null)!;

const policy = (over: Partial<PartitionPolicy> = {}): PartitionPolicy => ({ table: 'audit_events', ahead: 3, retentionDays: 0, detachOnly: false, ...over });

/** Some real history through the engine, plus rows written months ago (bulk batch records, with no intent). */
async function writeHistory(now: Date) {
  const a = await makeIntent('PROCESSED');
  await reevaluateIntent({ id: a.id, diff: { amount: 12 }, source: 'test', reason: 'fix amount' }, tester);
  await expect(updateIntentStatus({ id: a.id, status: 'COMPLETED', expectedVersion: 0 }, tester)).rejects.toBeInstanceOf(VersionConflictError);
  await updateIntentStatus({ id: a.id, status: 'COMPLETED', idempotencyKey: 'k-1' }, tester);
  await updateIntentStatus({ id: a.id, status: 'COMPLETED', idempotencyKey: 'k-1' }, tester);
  const b = await makeIntent('RECEIVED');
  await runPipeline({ id: b.id }, tester);
  for (const daysAgo of [150, 120, 95, 40]) {
    await db().$executeRaw`
      INSERT INTO audit_events (action, actor, details, at)
      VALUES ('bulk_batch', 'test-runner', jsonb_build_object('phase', 'started', 'daysAgo', ${daysAgo}::int), ${new Date(now.getTime() - daysAgo * DAY)}::timestamptz)`;
  }
  await flushOutcomes();
}

/** What the append-only trigger raises. */
const INSUFFICIENT_PRIVILEGE = '42501';

async function expectRefused(statement: Promise<unknown>) {
  const err = await statement.then(
    () => null,
    (e: unknown) => e,
  );
  expect(sqlState(err)).toBe(INSUFFICIENT_PRIVILEGE);
}

describe('audit_events partitioned by month', () => {
  const now = new Date();
  let before: Awaited<ReturnType<typeof fingerprint>>;

  beforeAll(async () => {
    await older.open();
    await writeHistory(now);
    before = await fingerprint();
    await older.keep('history');
    // Converted once here for the tests of the partitioned table: each starts from a copy of this state.
    await migrate(oldUrl);
    await older.keep('converted');
  });

  afterAll(() => older.close());

  describe('the conversion', () => {
    beforeEach(() => older.restore('history'));

    it('converts a database with history in place: every row, the outbox and every invariant as before', async () => {
      const [{ kind }] = await db().$queryRaw<{ kind: string }[]>`SELECT relkind::text AS kind FROM pg_class WHERE oid = 'audit_events'::regclass`;
      expect(kind).toBe('r');
      const checkedBefore = await checkInvariants(db());
      expect(checkedBefore.violationCount).toBe(0);

      const result = await migrate(oldUrl);
      expect(result.applied[0]).toBe(MIGRATION);

      const [{ kind: after }] = await db().$queryRaw<{ kind: string }[]>`SELECT relkind::text AS kind FROM pg_class WHERE oid = 'audit_events'::regclass`;
      expect(after).toBe('p');
      expect(await fingerprint()).toEqual(before);
      const checkedAfter = await checkInvariants(db());
      expect(checkedAfter.violationCount).toBe(0);
      expect(checkedAfter.checks.map((c) => [c.name, 'checked' in c ? c.checked : c.skipped])).toEqual(
        checkedBefore.checks.map((c) => [c.name, 'checked' in c ? c.checked : c.skipped]),
      );

      // One partition per month from the oldest row's to three months past now, then the catch-all, empty.
      const parts = await partitions();
      const expected: string[] = [];
      for (let m = monthStart(new Date(now.getTime() - 150 * DAY)); m <= monthStart(now, 3); m = monthStart(m, 1)) expected.push(monthName(m));
      expect(months(parts).map((p) => p.name)).toEqual(expected);
      expect(catchAll(parts)).toMatchObject({ name: 'audit_events_future', fromAt: monthStart(now, 4), rows: 0 });
      expect(parts.reduce((n, p) => n + p.rows, 0)).toBe(before.rows);
    });
  });

  describe('the partitioned table', () => {
    beforeEach(() => older.restore('converted'));

    it('keeps writing after the conversion: ids continue from the same sequence, the outbox still hears the table', async () => {
      const intent = await makeIntent('NORMALIZED');
      const [last] = await db().$queryRaw<{ id: string; partition: string }[]>`
        SELECT id::text, tableoid::regclass::text AS partition FROM audit_events WHERE intent_id = ${intent.id}::uuid ORDER BY id DESC LIMIT 1`;
      expect(BigInt(last.id)).toBeGreaterThan(BigInt(before.maxId));
      expect(last.partition).toBe(monthName(now));
      const [{ n }] = await db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM outbox_events WHERE ordering_key = ${intent.id}`;
      expect(n).toBe(2);
      await flushOutcomes();
      expect((await checkInvariants(db())).violationCount).toBe(0);
    });

    it('refuses updates and deletes on the table and on every partition, the catch-all included', async () => {
      // One row in every partition, so each refusal is a real one.
      for (const p of await partitions()) {
        await db().$executeRaw`INSERT INTO audit_events (action, actor, details, at) VALUES ('bulk_batch', 'test-runner', '{"phase":"started"}'::jsonb, ${p.fromAt}::timestamptz)`;
      }
      const parts = await partitions();
      expect(parts.every((p) => p.rows > 0)).toBe(true);
      await expectRefused(db().$executeRaw`UPDATE audit_events SET actor = 'rewritten'`);
      await expectRefused(db().$executeRaw`DELETE FROM audit_events`);
      // Aimed at each partition itself, by name (a table name cannot be a bound parameter).
      const client = new pg.Client({ connectionString: oldUrl });
      await client.connect();
      try {
        for (const p of parts) {
          const [{ triggers }] = await db().$queryRaw<{ triggers: number }[]>`
            SELECT count(*)::int AS triggers FROM pg_trigger WHERE tgrelid = ${p.name}::regclass AND tgname = 'audit_events_no_update'`;
          expect(triggers, p.name).toBe(1);
          await expectRefused(client.query(`UPDATE ${client.escapeIdentifier(p.name)} SET actor = 'rewritten'`));
          await expectRefused(client.query(`DELETE FROM ${client.escapeIdentifier(p.name)}`));
        }
      } finally {
        await client.end();
      }
      const [{ rewritten }] = await db().$queryRaw<{ rewritten: number }[]>`SELECT count(*)::int AS rewritten FROM audit_events WHERE actor = 'rewritten'`;
      expect(rewritten).toBe(0);
    });

    it('moves rows the catch-all took into their months, without sending them out again', async () => {
      const far = monthStart(now, 24);
      // One row at the catch-all's first instant, one far past it.
      await db().$executeRaw`INSERT INTO audit_events (action, actor, details, at) VALUES ('bulk_batch', 'test-runner', '{"phase":"stranded"}'::jsonb, ${monthStart(now, 4)}::timestamptz)`;
      await db().$executeRaw`INSERT INTO audit_events (action, actor, details, at) VALUES ('bulk_batch', 'test-runner', '{"phase":"stranded"}'::jsonb, ${new Date(far.getTime() + 5 * DAY)}::timestamptz)`;
      const rowsBefore = await fingerprint();
      expect(catchAll(await partitions()).rows).toBe(2);

      const report = await maintainPartitions(policy(), now);
      // Every month up to the newest stranded row's, so no gap opens before the catch-all.
      const expected: string[] = [];
      for (let m = monthStart(now, 4); m <= far; m = monthStart(m, 1)) expected.push(monthName(m));
      expect(report.created).toEqual(expected);
      const parts = await partitions();
      expect(catchAll(parts)).toMatchObject({ name: 'audit_events_future', fromAt: monthStart(far, 1), rows: 0 });
      expect(parts.find((p) => p.name === monthName(far))!.rows).toBe(1);
      expect(parts.find((p) => p.name === monthName(monthStart(now, 4)))!.rows).toBe(1);
      expect(await fingerprint()).toEqual(rowsBefore);
      const [{ triggers }] = await db().$queryRaw<{ triggers: number }[]>`
        SELECT count(*)::int AS triggers FROM pg_trigger WHERE tgrelid = 'audit_events_future'::regclass AND tgname = 'audit_events_no_update'`;
      expect(triggers).toBe(1);
    });

    it('refuses a row older than the oldest partition (no partition takes it), and writes nothing', async () => {
      const oldest = months(await partitions())[0];
      const err = await db()
        .$executeRaw`INSERT INTO audit_events (action, actor, details, at) VALUES ('bulk_batch', 'test-runner', '{}'::jsonb, ${new Date(oldest.fromAt.getTime() - 1000)}::timestamptz)`
        .then(() => null, (e: unknown) => e);
      expect(sqlState(err)).toBe('23514');
    });

    it('creates the months ahead across a month boundary, with the time moved by SQL', async () => {
      const last = months(await partitions()).at(-1)!.fromAt;
      // The last minute of the last month that exists: nothing to create …
      const lastMinute = new Date(monthStart(last, 1).getTime() - 60_000);
      expect(await maintainPartitions(policy({ ahead: 0 }), lastMinute)).toMatchObject({ ran: true, created: [], retired: [] });
      // … and a second past the boundary, the new month and, with one month ahead, the next appear.
      const justAfter = new Date(monthStart(last, 1).getTime() + 1000);
      const report = await maintainPartitions(policy({ ahead: 1 }), justAfter);
      expect(report.created).toEqual([monthName(monthStart(last, 1)), monthName(monthStart(last, 2))]);
      expect(catchAll(await partitions()).fromAt).toEqual(monthStart(last, 3));
      const [{ partition }] = await db().$queryRaw<{ partition: string }[]>`
        INSERT INTO audit_events (action, actor, details, at) VALUES ('bulk_batch', 'test-runner', '{"phase":"started"}'::jsonb, ${monthStart(last, 2)}::timestamptz)
        RETURNING tableoid::regclass::text AS partition`;
      expect(partition).toBe(monthName(monthStart(last, 2)));
      // Again at the same time: nothing more to do.
      expect((await maintainPartitions(policy({ ahead: 1 }), justAfter)).created).toEqual([]);
    });

    it('retires exactly the expired partitions: only detached when asked, else dropped', async () => {
      const parts = months(await partitions());
      // At this `now`, with 10 days kept, every month that ended at least 10 days before the third partition ends expires.
      const third = parts[2];
      const at = new Date(third.toAt!.getTime() + 10 * DAY);
      const expired = parts.filter((p) => p.toAt! <= third.toAt!).map((p) => p.name);
      const kept = parts.filter((p) => p.toAt! > third.toAt!).map((p) => p.name);
      const expiredRows = parts.filter((p) => expired.includes(p.name)).reduce((n, p) => n + p.rows, 0);
      const total = (await fingerprint()).rows;

      const detached = await maintainPartitions(policy({ retentionDays: 10, detachOnly: true, ahead: 0 }), at);
      expect(detached.retired).toEqual(expired);
      const left = await partitions();
      expect(left.map((p) => p.name)).toEqual(expect.arrayContaining(kept));
      expect(left.some((p) => expired.includes(p.name))).toBe(false);
      expect((await fingerprint()).rows).toBe(total - expiredRows);
      // Detached, each is a table of its own with its rows, for archiving.
      for (const name of expired) {
        const [{ n, partition }] = await db().$queryRaw<{ n: number; partition: boolean }[]>`
          SELECT (SELECT count(*)::int FROM pg_class c WHERE c.oid = ${name}::regclass) AS n,
                 (SELECT relispartition FROM pg_class WHERE oid = ${name}::regclass) AS partition`;
        expect([n, partition]).toEqual([1, false]);
      }

      // A month later with drop: the next expired month is detached and dropped, nothing else.
      const fourth = parts[3];
      const dropped = await maintainPartitions(policy({ retentionDays: 10, ahead: 0 }), new Date(fourth.toAt!.getTime() + 10 * DAY));
      expect(dropped.retired).toEqual([fourth.name]);
      const [{ exists }] = await db().$queryRaw<{ exists: boolean }[]>`SELECT to_regclass(${fourth.name}) IS NOT NULL AS exists`;
      expect(exists).toBe(false);
      expect((await partitions()).map((p) => p.name)).toEqual(expect.arrayContaining(kept.filter((k) => k !== fourth.name)));
    });

    it("prunes the Audit page's reads to the months they need", async () => {
      // A history worth pruning: a few hundred rows in every month, with statistics that say so. On the handful of
      // rows the conversion leaves, reading everything and sorting it is the cheapest plan, and the right one.
      await db().$executeRaw`
        INSERT INTO audit_events (action, actor, details, at)
        SELECT 'bulk_batch', 'test-runner', '{"phase":"started"}'::jsonb, m.from_at + n * interval '1 hour'
        FROM "bridge_partitions"('audit_events'::regclass) m, generate_series(1, 200) n
        WHERE m.to_at IS NOT NULL`;
      await db().$executeRaw`ANALYZE audit_events`;
      const parts = months(await partitions());
      const oldest = parts[0];
      const scanned = async (query: Promise<{ 'QUERY PLAN': string }[]>) => {
        const text = (await query).map((r) => r['QUERY PLAN']).join('\n');
        return { text, partitions: [...new Set([...text.matchAll(/on (audit_events_\w+)/g)].map((m) => m[1]))] };
      };
      // A later page: the cursor's (at, id) bound, with the plain `at <=` the planner prunes on.
      const cursorAt = new Date(oldest.toAt!.getTime() - 1);
      const later = await scanned(db().$queryRaw`
        EXPLAIN SELECT id FROM audit_events WHERE at <= ${cursorAt}::timestamptz AND (at, id) < (${cursorAt}::timestamptz, 1::bigint)
        ORDER BY at DESC, id DESC LIMIT 51`);
      expect(later.partitions).toEqual([oldest.name]);
      // A time filter: its months only.
      const window = await scanned(db().$queryRaw`
        EXPLAIN SELECT id FROM audit_events WHERE actor = 'test-runner' AND at >= ${parts[1].fromAt}::timestamptz AND at < ${parts[2].toAt}::timestamptz
        ORDER BY at DESC, id DESC LIMIT 51`);
      expect(window.partitions.sort()).toEqual([parts[1].name, parts[2].name].sort());
      // The first page has no bound: the partitions are read newest first, one after another (an Append in their
      // order, not a merge of all of them), and the read stops once the page is full.
      const first = await scanned(db().$queryRaw`EXPLAIN SELECT id FROM audit_events ORDER BY at DESC, id DESC LIMIT 51`);
      expect(first.text).not.toMatch(/Merge Append|Sort/);
    });

    it('lets one instance at a time maintain a table: the others skip', async () => {
      const holder = new pg.Client({ connectionString: oldUrl });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT pg_advisory_xact_lock(hashtext('bridge_partitions'), 'audit_events'::regclass::oid::int)`);
        expect(await maintainPartitions(policy(), now)).toEqual({ table: 'audit_events', ran: false, created: [], retired: [] });
        await holder.query('ROLLBACK');
        expect((await maintainPartitions(policy(), now)).ran).toBe(true);
      } finally {
        await holder.end();
      }
    });
  });
});
