import type { PressureReason } from '@/lib/shared/errors';

/**
 * Postgres reports one error under different Prisma codes depending on the query kind (raw → P2010, model query
 * deadlock → P2034, a 40001 at COMMIT as a bare DriverAdapterError), so we branch on the SQLSTATE only.
 */
export const SQLSTATE = {
  deadlock: '40P01',
  serializationFailure: '40001',
  lockNotAvailable: '55P03',
  queryCanceled: '57014',
  uniqueViolation: '23505',
  invalidTextRepresentation: '22P02',
  connectionFailure: '08006',
  /** The engine's own (prisma/functions/00_helpers.sql): a 'try' found the intent's row held by another transaction. */
  rowBusy: 'BR001',
  /** The engine's own: a 'wait' found every waiter place of the intent taken, and was refused without waiting. */
  rowWaitersFull: 'BR002',
} as const;

type WithCause = { code?: unknown; cause?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } };

export function sqlState(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const e = current as WithCause & { originalCode?: unknown };
    const fromMeta = e.meta?.driverAdapterError?.cause?.originalCode;
    if (typeof fromMeta === 'string') return fromMeta;
    if (typeof e.originalCode === 'string') return e.originalCode;
    // A plain `pg` error carries the SQLSTATE in `code` (five characters, never a Prisma "P…" code).
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) && !/^P\d{4}$/.test(e.code)) return e.code;
    current = e.cause;
  }
  return undefined;
}

export function isSqlState(err: unknown, state: string): boolean {
  return sqlState(err) === state;
}

/**
 * True when an interactive transaction could not start in time (every pooled connection busy past `maxWait`) or ran
 * past its `timeout` and was rolled back. Prisma raises these itself, before or after Postgres had any say, so there
 * is no SQLSTATE to read: this is the one Prisma code the project branches on, and only here.
 */
export function isTransactionWindowExceeded(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'P2028';
}

/**
 * Why the database did not answer a request in time, when that is what `err` says: its lock timeout, its statement
 * timeout, or no pooled connection free in time (or an interactive transaction past its time limit). Null otherwise.
 */
export function pressureReason(err: unknown): PressureReason | null {
  const state = sqlState(err);
  if (state === SQLSTATE.lockNotAvailable) return 'lock_timeout';
  if (state === SQLSTATE.queryCanceled) return 'statement_timeout';
  return isTransactionWindowExceeded(err) ? 'pool_busy' : null;
}

/** SQLSTATEs that mean the connection, not the request, failed: class 08, the server shutting down or killing us. */
const CONNECTION_LOSS_STATES = new Set(['57P01', '57P02', '57P03', '53300']);
/** The same, as the Prisma driver adapter names it when there was no SQLSTATE (a socket error). */
const CONNECTION_LOSS_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
/** The same, as Node's socket reports it to a statement run on the pool directly (queryOnPool). */
const SOCKET_LOSS_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/**
 * True when the database went away under a request — its backend terminated, a failover, the network — rather than
 * refusing it. Such a request is worth repeating: a single change either committed whole or not at all.
 */
export function isConnectionLoss(err: unknown): boolean {
  const state = sqlState(err);
  if (state && (state.startsWith('08') || CONNECTION_LOSS_STATES.has(state))) return true;
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const e = current as { kind?: unknown; cause?: unknown; meta?: { driverAdapterError?: { cause?: { kind?: unknown } } } };
    const kind = e.meta?.driverAdapterError?.cause?.kind ?? e.kind;
    if (typeof kind === 'string' && CONNECTION_LOSS_KINDS.has(kind)) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && SOCKET_LOSS_CODES.has(code)) return true;
    current = e.cause;
  }
  return false;
}
