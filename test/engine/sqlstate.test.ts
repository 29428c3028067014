import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Prisma } from '@/generated/prisma/client';
import pg from 'pg';
import { db, transactionOnPool } from '@/lib/db/client';
import { pgErrorOf } from '@/lib/db/pg-capture';
import { isConnectionLoss, pressureReason, SQLSTATE, sqlState } from '@/lib/db/sqlstate';
import { gate, holdRowLocks, resetEngine, session, settle, started, waitForWaiters, type RowLockHolder } from '../barriers';
import { makeIntent } from '../helpers';

/**
 * sqlState() against real errors from a real PostgreSQL through Prisma 7 and the pg adapter: each kind of query
 * wraps the SQLSTATE differently (raw → P2010, model → P2002/P2039, COMMIT → a bare DriverAdapterError).
 */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  const outcome = await settle(promise);
  if (outcome.ok) throw new Error('expected the database to refuse this');
  return outcome.error;
}

let holder: RowLockHolder | undefined;
beforeEach(resetEngine);
afterEach(async () => {
  await holder?.release().catch(() => undefined);
  holder = undefined;
});

describe('SQLSTATE from real Prisma errors', () => {
  it('23505 from a raw statement (P2010) and from a model query (P2002)', async () => {
    const intent = await makeIntent();
    const raw = await failure(db().$executeRaw`INSERT INTO intents (id, payload, source) VALUES (${intent.id}::uuid, '{}', 'dup')`);
    expect(raw).toMatchObject({ code: 'P2010' });
    expect(sqlState(raw)).toBe(SQLSTATE.uniqueViolation);
    const model = await failure(db().intent.create({ data: { id: intent.id, payload: {}, source: 'dup' } }));
    expect(model).toMatchObject({ code: 'P2002' });
    expect(sqlState(model)).toBe(SQLSTATE.uniqueViolation);
  });

  it('55P03 from FOR UPDATE NOWAIT (raw) and from a model update under lock_timeout (P2039)', async () => {
    const intent = await makeIntent();
    holder = await holdRowLocks([intent.id]);
    const nowait = await failure(db().$transaction((tx) => tx.$queryRaw`SELECT id FROM intents WHERE id = ${intent.id}::uuid FOR UPDATE NOWAIT`));
    expect(sqlState(nowait)).toBe(SQLSTATE.lockNotAvailable);
    const model = await failure(
      db().$transaction(async (tx) => {
        await tx.$executeRaw`SET LOCAL lock_timeout = '50ms'`;
        await tx.intent.update({ where: { id: intent.id }, data: { source: 'changed' } });
      }),
    );
    expect(model).toMatchObject({ code: 'P2039' });
    expect(sqlState(model)).toBe(SQLSTATE.lockNotAvailable);
  });

  it('57014 from a statement timeout', async () => {
    const err = await failure(
      db().$transaction(async (tx) => {
        await tx.$executeRaw`SET LOCAL statement_timeout = '20ms'`;
        await tx.$queryRaw`SELECT pg_sleep(5)`;
      }),
    );
    expect(sqlState(err)).toBe(SQLSTATE.queryCanceled);
    // Said to the caller as the statement timeout, not as a lock wait or a busy pool.
    expect(pressureReason(err)).toBe('statement_timeout');
  });

  it('a server that refuses the connection is a connection loss (the socket’s own code), not the request’s fault', async () => {
    // Port 1 on the loopback: nothing listens there, so the kernel refuses at once.
    const client = new pg.Client({ host: '127.0.0.1', port: 1, user: 'nobody', database: 'none' });
    const err = await failure(client.connect());
    expect(sqlState(err)).toBeUndefined();
    expect(isConnectionLoss(err)).toBe(true);
    expect(isConnectionLoss({ cause: err })).toBe(true);
    expect(pressureReason(err)).toBeNull();
  });

  it('22P02 from text that is not a uuid', async () => {
    expect(sqlState(await failure(db().$queryRaw`SELECT ${'not-a-uuid'}::uuid`))).toBe(SQLSTATE.invalidTextRepresentation);
  });

  it('40001 at COMMIT of a serializable transaction arrives as a bare DriverAdapterError', async () => {
    // Write skew: both count the same rows, both insert one; the second to commit must fail.
    const other = await session();
    await other.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
    await other.query(`SELECT count(*) FROM intents WHERE source = 'skew'`);
    const counted = gate();
    const inserted = gate();
    const commitNow = gate();
    const mine = started(
      db().$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT count(*) FROM intents WHERE source = 'skew'`;
          counted.open();
          await tx.$executeRaw`INSERT INTO intents (id, payload, source) VALUES (gen_random_uuid(), '{}', 'skew')`;
          inserted.open();
          await commitNow.wait;
        },
        { isolationLevel: 'Serializable' },
      ),
    );
    await counted.wait;
    await other.query(`INSERT INTO intents (id, payload, source) VALUES (gen_random_uuid(), '{}', 'skew')`);
    await inserted.wait;
    await other.query('COMMIT');
    commitNow.open();
    const err = await failure(mine);
    expect((err as Error).name).toBe('DriverAdapterError');
    expect((err as { code?: unknown }).code).toBeUndefined();
    expect(sqlState(err)).toBe(SQLSTATE.serializationFailure);
  });

  it("40P01 from a crossing-order deadlock: through Prisma the SQLSTATE (P2010), through pg also Postgres' DETAIL", async () => {
    // Each side runs one of the two ways: the deadlock's victim is whichever Postgres picks, so each way is checked
    // for what it carries whenever it lost, and the round repeats (swapping sides) until both ways have lost once.
    const seen = { prisma: undefined as unknown, pg: undefined as unknown };
    for (let round = 0; round < 20 && (!seen.prisma || !seen.pg); round++) {
      const [a, b] = [await makeIntent(), await makeIntent()];
      // The test holds an advisory lock; each transaction takes its first row, then queues on the advisory lock, so
      // both hold their first row before either asks for its second.
      const barrier = await session('bridge-test:barrier');
      await barrier.query('SELECT pg_advisory_lock(4242)');
      const viaPrisma = (first: string, second: string) =>
        db().$transaction(async (tx) => {
          await tx.$queryRaw`SELECT id FROM intents WHERE id = ${first}::uuid FOR UPDATE`;
          await tx.$executeRaw`SELECT pg_advisory_xact_lock_shared(4242)`;
          await tx.$queryRaw`SELECT id FROM intents WHERE id = ${second}::uuid FOR UPDATE`;
        });
      const viaPg = (first: string, second: string) =>
        transactionOnPool(async (query) => {
          await query(Prisma.sql`SELECT id FROM intents WHERE id = ${first}::uuid FOR UPDATE`);
          await query(Prisma.sql`SELECT pg_advisory_xact_lock_shared(4242)`);
          await query(Prisma.sql`SELECT id FROM intents WHERE id = ${second}::uuid FOR UPDATE`);
        });
      const [one, two] = round % 2 === 0 ? [settle(viaPrisma(a.id, b.id)), settle(viaPg(b.id, a.id))] : [settle(viaPg(a.id, b.id)), settle(viaPrisma(b.id, a.id))];
      await waitForWaiters(2, { application: 'bridge:console' });
      await barrier.query('SELECT pg_advisory_unlock(4242)');
      const results = [await one, await two];
      expect(results.filter((r) => r.ok)).toHaveLength(1);
      const failed = results.findIndex((r) => !r.ok);
      const way = (round % 2 === 0) === (failed === 0) ? 'prisma' : 'pg';
      seen[way] = (results[failed] as { error: unknown }).error;
    }
    expect(seen.prisma).toMatchObject({ code: 'P2010' });
    expect(sqlState(seen.prisma)).toBe(SQLSTATE.deadlock);
    expect(pgErrorOf(seen.prisma)).toEqual({ code: SQLSTATE.deadlock, message: 'deadlock detected' });
    expect(sqlState(seen.pg)).toBe(SQLSTATE.deadlock);
    expect(pgErrorOf(seen.pg)).toMatchObject({
      code: SQLSTATE.deadlock,
      message: 'deadlock detected',
      detail: expect.stringMatching(/Process \d+ waits for ShareLock on transaction \d+; blocked by process \d+\./),
    });
  });
});
