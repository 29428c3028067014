import { AsyncLocalStorage } from 'node:async_hooks';
import { Prisma, type PrismaClient } from '@/generated/prisma/client';
import { db, queryOn, queryOnPool } from './client';
import { parseLsn } from './lsn';
import { ReadReplicas, replicaOptions, replicaUrls, type Replica, type ReplicaOptions, type ReplicaStatus } from './replicas';

/**
 * Where the console's reads run: the primary, or a read replica that has replayed everything the reader must see.
 *
 * The doors decide per request. A request opens a read scope (withReadScope) holding the WAL position its reader
 * must see — the commit position of their last command (a cookie for a signed-in person, kept in process and echoed
 * in a header for an API token) — and the first read of the request picks a replica in rotation that has replayed at
 * least that far, or the primary when none has; the rest of the request's reads go to the same place. A read outside
 * any scope (workers, scripts, the engine's own reads inside a command) runs on the primary: only the doors that
 * know who is reading may send a read elsewhere.
 *
 * Without DATABASE_READ_URL none of this runs: readDb() is db(), queryOnReadPool() is queryOnPool(), and no query is
 * added to any path.
 */
export type ReadScope = {
  /** The WAL position this reader must see (0n: no command of theirs to wait for). */
  after: bigint;
  choice?: Promise<Replica | null>;
  /** Where the scope's reads went: a replica's name, or `primary`. Unset until the first read. */
  servedBy?: string;
  /** Every read on the primary: a command and whatever it reads on its way (its answer must be the present). */
  primary?: true;
};

const scopes = new AsyncLocalStorage<ReadScope>();

/**
 * Kept on globalThis: Next bundles the pages, the route handlers and the instrumentation separately, and all of them
 * must share one monitor and the page renderer's scope provider.
 */
const shared = globalThis as unknown as {
  bridgeReadReplicas?: ReadReplicas | null;
  bridgeRequestReadScope?: () => Promise<ReadScope | null>;
  bridgeTokenPositions?: Map<string, bigint>;
};

async function primaryWalPosition(): Promise<bigint | null> {
  const [row] = await queryOnPool<{ lsn: string }>(Prisma.sql`SELECT pg_current_wal_lsn()::text AS lsn`);
  return parseLsn(row?.lsn);
}

/** The configured replicas and their monitor, or null when every read runs on the primary. */
export function readReplicas(): ReadReplicas | null {
  if (shared.bridgeReadReplicas === undefined) {
    const urls = replicaUrls();
    shared.bridgeReadReplicas = urls.length ? new ReadReplicas(urls, replicaOptions(), primaryWalPosition) : null;
  }
  return shared.bridgeReadReplicas;
}

/** Replaces the configured replicas (tests; a script that wants its own). An empty list: all reads on the primary. */
export async function useReadReplicas(urls: string[], options: ReplicaOptions = replicaOptions()): Promise<ReadReplicas | null> {
  await closeReadReplicas();
  shared.bridgeReadReplicas = urls.length ? new ReadReplicas(urls, options, primaryWalPosition) : null;
  return shared.bridgeReadReplicas;
}

export async function closeReadReplicas(): Promise<void> {
  const current = shared.bridgeReadReplicas;
  shared.bridgeReadReplicas = undefined;
  shared.bridgeTokenPositions?.clear();
  await current?.close();
}

/** The replicas as /api/ready and the console show them; empty without DATABASE_READ_URL. */
export async function replicaStatus(): Promise<ReplicaStatus[]> {
  const replicas = readReplicas();
  if (!replicas) return [];
  await replicas.start();
  return replicas.status();
}

/**
 * Page renders have no door of ours around them: the page layer registers how to find the current request's scope
 * (from its cookie, memoised per request). Outside a request it answers null, and the read runs on the primary.
 */
export function registerRequestReadScope(provider: () => Promise<ReadScope | null>): void {
  shared.bridgeRequestReadScope = provider;
}

/** Runs `fn` with its reads allowed on a replica that has replayed `after` (null: any replica in rotation). */
export function withReadScope<T>(after: bigint | null, fn: () => Promise<T>): Promise<T> {
  return scopes.run({ after: after ?? 0n }, fn);
}

/**
 * Runs `fn` with every read on the primary, whatever the request's cookie says: the doors wrap commands in it, so a
 * read a command makes (the intent it answers with, the search a bulk change selects by) sees the present.
 */
export function onPrimary<T>(fn: () => Promise<T>): Promise<T> {
  return readReplicas() ? scopes.run({ after: 0n, primary: true }, fn) : fn();
}

/** Where the current scope's reads went (`primary` or a replica's name); undefined when nothing was read through it. */
export function readServedBy(): string | undefined {
  return scopes.getStore()?.servedBy;
}

async function readTarget(): Promise<Replica | null> {
  const replicas = readReplicas();
  if (!replicas) return null;
  const scope = scopes.getStore() ?? (await shared.bridgeRequestReadScope?.().catch(() => null)) ?? null;
  if (!scope || scope.primary) return null;
  // A replica that fails to answer whether it has replayed far enough sends the read to the primary, never to an error.
  scope.choice ??= replicas.choose(scope.after).catch(() => null);
  const replica = await scope.choice;
  scope.servedBy = replica?.name ?? 'primary';
  return replica;
}

/** The Prisma client for a console read: a replica's when the read scope allows one, else the primary's (db()). */
export async function readDb(): Promise<PrismaClient> {
  return (await readTarget())?.prisma ?? db();
}

/** queryOnPool for a console read, on the replica the read scope allows, else on the primary. */
export async function queryOnReadPool<T>(query: Prisma.Sql): Promise<T[]> {
  const replica = await readTarget();
  return replica ? queryOn<T>(replica.pool, query) : queryOnPool<T>(query);
}

/**
 * After a command: the primary's WAL position, which a reader's next reads must see; null without replicas (then
 * nothing is asked). Asked after the command's commit has returned, the position is at or past the commit record: a
 * commit returns only once its record is in the WAL, and the insert position (pg_current_wal_insert_lsn, not the
 * write position, which with synchronous_commit off may still trail it) never moves backwards. A replica that has
 * replayed this far has replayed the commit, so the reader sees their change there.
 */
export async function commitPosition(): Promise<string | null> {
  if (!readReplicas()) return null;
  const [row] = await queryOnPool<{ lsn: string }>(Prisma.sql`SELECT pg_current_wal_insert_lsn()::text AS lsn`);
  return row.lsn;
}

/** The most API tokens whose last position one process keeps. */
const MAX_TOKEN_POSITIONS = 10_000;

function tokenPositions(): Map<string, bigint> {
  return (shared.bridgeTokenPositions ??= new Map());
}

/** Remembers, in this process, the last commit position of an API token's command. */
export function rememberTokenPosition(credentialId: string, lsn: string): void {
  const position = parseLsn(lsn);
  if (position === null) return;
  const positions = tokenPositions();
  const known = positions.get(credentialId);
  if (known !== undefined && known >= position) return;
  positions.delete(credentialId);
  positions.set(credentialId, position);
  // Oldest first in a Map: the token whose last command is longest ago is forgotten first; by then every replica in
  // rotation has replayed far past it.
  if (positions.size > MAX_TOKEN_POSITIONS) positions.delete(positions.keys().next().value!);
}

export function tokenPosition(credentialId: string): bigint | null {
  return tokenPositions().get(credentialId) ?? null;
}

/** The furthest of several positions (from a cookie, a header, this process's memory); unreadable ones are ignored. */
export function furthest(...positions: (bigint | string | null | undefined)[]): bigint | null {
  let max: bigint | null = null;
  for (const p of positions) {
    const value = typeof p === 'string' ? parseLsn(p) : (p ?? null);
    if (value !== null && (max === null || value > max)) max = value;
  }
  return max;
}
