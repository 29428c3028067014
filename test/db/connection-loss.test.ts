import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createPool, createPrisma } from '@/lib/db/client';
import { oneLineError } from '@/lib/db/pg-capture';
import { isConnectionLoss, isTransactionWindowExceeded, sqlState } from '@/lib/db/sqlstate';
import { toErrorResponse } from '@/lib/http/respond';
import { rawClient } from '../helpers';
import { waitForWaiters } from '../barriers';
import { eventually } from '../wait';

/**
 * A backend killed under a request (pg_terminate_backend, as an operator or a failover does) is the database going
 * away, not a bug: the API answers 503 database_unavailable with Retry-After, never a 500.
 */
const pool = createPool(process.env.DATABASE_URL!, 2);
pool.on('error', () => undefined);
const client = createPrisma(pool, { preparedStatements: false });
afterAll(async () => {
  await client.$disconnect();
  await pool.end();
});

async function failureOfTerminatedQuery(): Promise<unknown> {
  const holder = await rawClient('bridge-test:blocker');
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE intents IN ACCESS EXCLUSIVE MODE');
    // The victim queues behind the table lock, so it is certainly mid-statement when it is killed.
    const victim = client.$queryRaw`SELECT count(*) FROM intents`.then(
      () => null,
      (err: unknown) => err,
    );
    await waitForWaiters(1);
    await holder.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = 'bridge:console'`);
    return await victim;
  } finally {
    await holder.query('ROLLBACK');
    await holder.end();
  }
}

describe('connection loss', () => {
  // Both outcomes are logged by design; keep the test output readable.
  beforeEach(() => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  });

  it('is recognised from a real terminated backend, and answered 503 with Retry-After', async () => {
    const err = await failureOfTerminatedQuery();
    expect(err).not.toBeNull();
    expect(sqlState(err)).toBe('57P01');
    expect(isConnectionLoss(err)).toBe(true);
    const res = toErrorResponse(err);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: { code: 'database_unavailable' } });
    // A worker's log line for it (heartbeat, claiming, rescue): the server's words and the SQLSTATE, on one line,
    // not Prisma's invocation text over several.
    expect(String((err as Error).message)).toContain('\n');
    expect(oneLineError(err)).toBe('terminating connection due to administrator command (SQLSTATE 57P01)');
  });

  it('is not claimed for errors that are the request’s own', () => {
    expect(isConnectionLoss({ code: '23505' })).toBe(false);
    expect(isConnectionLoss(new Error('boom'))).toBe(false);
    expect(isConnectionLoss({ cause: { kind: 'ConnectionClosed' } })).toBe(true);
    expect(toErrorResponse(new Error('boom')).status).toBe(500);
    expect(oneLineError(new Error('first\n\n  second  '))).toBe('first second');
  });
});

describe('a connection that died between two statements of a transaction', () => {
  beforeEach(() => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  });

  it('fails its next statement as connection_failure (08006), not as an unknown error', async () => {
    const killer = await rawClient('bridge-test:killer');
    try {
      const failure = await client
        .$transaction(async (tx) => {
          const [{ pid }] = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
          await killer.query('SELECT pg_terminate_backend($1)', [pid]);
          // Wait until the server has really gone, then use the transaction again.
          await eventually('the terminated backend to be gone', async () => (await killer.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rows.length === 0);
          await tx.$queryRaw`SELECT 1`;
        })
        .then(
          () => null,
          (err: unknown) => err,
        );
      expect(failure).not.toBeNull();
      expect(isConnectionLoss(failure)).toBe(true);
      expect(toErrorResponse(failure).status).toBe(503);
    } finally {
      await killer.end();
    }
  });
});

describe('a database too busy to answer in time', () => {
  beforeEach(() => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
  });

  it('a statement stopped by its statement timeout is a 503 db_under_pressure with Retry-After, not a 500', async () => {
    const failure = await client
      .$transaction(async (tx) => {
        await tx.$executeRaw`SET LOCAL statement_timeout = '20ms'`;
        await tx.$queryRaw`SELECT pg_sleep(2)`;
      })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(sqlState(failure)).toBe('57014');
    const res = toErrorResponse(failure);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(await res.json()).toMatchObject({ error: { code: 'db_under_pressure', details: { reason: 'statement_timeout' } } });
  });

  it('a transaction that runs past its time limit is rolled back and answered 503 db_under_pressure', async () => {
    const failure = await client
      .$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT pg_sleep(0.5)::text`;
          await tx.$executeRaw`CREATE TEMP TABLE never_made (x int)`;
        },
        { timeout: 50 },
      )
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(isTransactionWindowExceeded(failure)).toBe(true);
    const res = toErrorResponse(failure);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { code: 'db_under_pressure', details: { reason: 'pool_busy' } } });
  });
});
