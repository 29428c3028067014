import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { Prisma, PrismaClient } from '@/generated/prisma/client';
import { env } from '@/lib/env';
import { CapturingClient } from './pg-capture';

/**
 * The one database client. Created lazily so that scripts and tests can set DATABASE_URL first; cached on
 * globalThis so development hot reloads do not open a new pool each time.
 */
const globalForDb = globalThis as unknown as { bridgePrisma?: PrismaClient; bridgePool?: pg.Pool };

export function createPool(connectionString: string, max = env().DB_POOL_SIZE, options: Partial<pg.PoolConfig> = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: 'bridge:console', Client: CapturingClient, ...options });
  // An idle pooled connection that the server ends (a restart, an operator's pg_terminate_backend, a throw-away
  // database stopping) emits 'error' on the pool; unheard, Node would crash the process. The pool drops that
  // connection and opens a new one when needed; queries in flight still fail with their own error.
  pool.on('error', (err) => console.warn(`[db] an idle database connection was closed: ${err.message}`));
  return pool;
}

/**
 * Names for server-side prepared statements. An unnamed statement is parsed and planned by Postgres on every
 * execution; a named one once per connection. For a short transaction the planning is a large share of what
 * Postgres spends on it (docs/bench/2026-11-23-engine.md has the figures). Only
 * statements with parameters are named (BEGIN/COMMIT gain nothing), and at most MAX_NAMED_STATEMENTS distinct
 * texts per process, so a query built with varying text cannot fill every connection with plans.
 * DB_PREPARED_STATEMENTS=false turns it off (PgBouncer in transaction mode before 1.21 cannot route them).
 */
const MAX_NAMED_STATEMENTS = 500;
const statementNames = new Map<string, string>();

const PLAN_WITH_VALUES_MARK = '/* planned with its values */';

/**
 * Put first in a query whose best plan depends on its values: a search, or a filter over skewed data (a source that
 * holds a fifth of the rows, or none). Such a query is never named, so PostgreSQL plans it with the values every
 * time. A named statement switches to a generic plan after five runs, and the generic plan of "does any intent
 * have this source" is a sequential scan (a fifth of the rows match, on average): for a source that does not exist
 * it reads the whole table. Planning costs a fraction of a millisecond; a wrong plan costs seconds.
 */
export const planWithValues = Prisma.raw(`${PLAN_WITH_VALUES_MARK} `);

export function preparedStatementName(query: { sql: string; args: readonly unknown[] }): string {
  if (query.args.length === 0 || query.sql.startsWith(PLAN_WITH_VALUES_MARK)) return '';
  let name = statementNames.get(query.sql);
  if (name === undefined) {
    if (statementNames.size >= MAX_NAMED_STATEMENTS) return '';
    name = `bc_${createHash('sha1').update(query.sql).digest('hex').slice(0, 24)}`;
    statementNames.set(query.sql, name);
  }
  return name;
}

export function createPrisma(pool: pg.Pool, options: { preparedStatements?: boolean } = {}): PrismaClient {
  const prepared = options.preparedStatements ?? env().DB_PREPARED_STATEMENTS;
  const adapter = new PrismaPg(pool, prepared ? { statementNameGenerator: preparedStatementName } : undefined);
  return new PrismaClient({ adapter, transactionOptions: { maxWait: 15_000, timeout: 60_000 } });
}

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: start the console with `npm start`, which provides one.');
  return url;
}

/**
 * A connection that is not shared between clients: LISTEN and session-level locks need one. Behind PgBouncer in
 * transaction mode DATABASE_URL points at the pooler, which hands each transaction to any server connection, so a
 * LISTEN there would hear nothing: DATABASE_DIRECT_URL names the database itself. Without it, DATABASE_URL is direct.
 */
export function directDatabaseUrl(): string {
  return process.env.DATABASE_DIRECT_URL || databaseUrl();
}

function connected(): { prisma: PrismaClient; pool: pg.Pool } {
  if (!globalForDb.bridgePrisma || !globalForDb.bridgePool) {
    globalForDb.bridgePool = createPool(databaseUrl());
    globalForDb.bridgePrisma = createPrisma(globalForDb.bridgePool);
  }
  return { prisma: globalForDb.bridgePrisma, pool: globalForDb.bridgePool };
}

export function db(): PrismaClient {
  return connected().prisma;
}

/**
 * Runs one statement that is a transaction on its own (the engine's commands: a database function call that
 * decides, writes and answers) straight on the pool under db(), through `pg`. Same pool, same connections, same
 * statement names (preparedStatementName) and parameters bound from the same Prisma.sql template as $queryRaw —
 * without Prisma's per-query runtime (its query interpreter, tracing wrapper and row re-encoding), which profiling
 * showed to cost more client CPU than the statement's own `pg` work on the hottest path (docs/bench/2026-11-23-engine.md). Rows come
 * back with `pg`'s own parsing: timestamps as Date, json as values, int8 and numeric as strings (cast in the SQL).
 * Nothing that must join an interactive transaction belongs here: that runs on its `tx`.
 */
export async function queryOnPool<T>(query: Prisma.Sql): Promise<T[]> {
  return queryOn<T>(connected().pool, query);
}

/** queryOnPool on a given pool (a read replica's, lib/db/read.ts). */
export async function queryOn<T>(pool: pg.Pool, query: Prisma.Sql): Promise<T[]> {
  const prepared = env().DB_PREPARED_STATEMENTS;
  const name = prepared ? preparedStatementName({ sql: query.text, args: query.values }) : '';
  const result = await pool.query({ name: name || undefined, text: query.text, values: query.values as unknown[] });
  return result.rows as T[];
}

/** Runs a Prisma.Sql on the connection of a transactionOnPool, answering its rows. */
export type PoolQuery = <T>(query: Prisma.Sql) => Promise<T[]>;

/**
 * An interactive transaction on one of the pool's connections, through `pg` itself, for the transactions that may
 * deadlock by design (the replay's crossing-order transaction) or wait on row locks outside the engine's commands.
 * Their errors are `pg`'s own, with every field Postgres sent: a deadlock's DETAIL ("Process 1 waits for ShareLock
 * on transaction 2; blocked by process 3 …") reaches the deadlock record. Prisma's driver adapter keeps a deadlock's
 * SQLSTATE but not its DETAIL, so such transactions do not run on db().$transaction.
 */
export async function transactionOnPool<T>(fn: (query: PoolQuery) => Promise<T>): Promise<T> {
  const client = await connected().pool.connect();
  const query: PoolQuery = async <R>(q: Prisma.Sql) => (await client.query({ text: q.text, values: q.values as unknown[] })).rows as R[];
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(query);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // A connection whose ROLLBACK fails is in no state to serve anyone else: the pool discards it.
    await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
    throw err;
  } finally {
    client.release(broken);
  }
}

export async function disconnectDb(): Promise<void> {
  const client = globalForDb.bridgePrisma;
  const pool = globalForDb.bridgePool;
  globalForDb.bridgePrisma = undefined;
  globalForDb.bridgePool = undefined;
  await client?.$disconnect();
  await pool?.end();
}

export type Db = PrismaClient;
export type Tx = Prisma.TransactionClient;
