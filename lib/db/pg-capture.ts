import pg from 'pg';
import { SQLSTATE, sqlState } from './sqlstate';

/**
 * Prisma's pg adapter keeps a deadlock's SQLSTATE but drops Postgres' DETAIL ("Process 1 waits for ShareLock on
 * transaction 2; blocked by process 3 …"), which an on-call engineer needs recorded with each deadlock. The pool's clients
 * append a deadlock's DETAIL to its message — the one text the adapter carries through, as `originalMessage` — and
 * withPgErrorCapture reads it back from the very error the operation failed with.
 *
 * (Noting the last error per AsyncLocalStorage context, as first done here, misattributes: Prisma dispatches the
 * queries of concurrent transactions from one async context, so a deadlock's detail could land with the survivor.)
 */
export type CapturedPgError = { code: string; message: string; detail?: string };

const DETAIL_MARK = '\nDETAIL: ';

type Carrier = { message?: unknown; detail?: unknown; originalMessage?: unknown; cause?: unknown; meta?: { driverAdapterError?: { cause?: { originalMessage?: unknown } } } };

/** The server error behind `err` (a Prisma error, a DriverAdapterError or a plain pg error), with its DETAIL. */
export function pgErrorOf(err: unknown): CapturedPgError | undefined {
  const code = sqlState(err);
  if (!code) return undefined;
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const e = current as Carrier;
    const text = e.meta?.driverAdapterError?.cause?.originalMessage ?? e.originalMessage;
    if (typeof text === 'string') {
      const at = text.indexOf(DETAIL_MARK);
      return at < 0 ? { code, message: text } : { code, message: text.slice(0, at), detail: text.slice(at + DETAIL_MARK.length) };
    }
    if (typeof e.detail === 'string' && typeof e.message === 'string') {
      const at = e.message.indexOf(DETAIL_MARK);
      return { code, message: at < 0 ? e.message : e.message.slice(0, at), detail: e.detail };
    }
    current = e.cause;
  }
  return { code, message: err instanceof Error ? err.message : String(err) };
}

/**
 * An error as one log line: the server's own message and SQLSTATE when the database raised it (Prisma's text for the
 * same error runs over several lines, with the invocation first), otherwise the message with its line breaks folded.
 */
export function oneLineError(err: unknown): string {
  const pgError = pgErrorOf(err);
  if (pgError) return `${pgError.message} (SQLSTATE ${pgError.code})`;
  return (err instanceof Error ? err.message : String(err)).trim().replace(/\s*\n\s*/g, ' ');
}

export function withPgErrorCapture<T>(fn: () => Promise<T>): { run: () => Promise<T>; lastError: () => CapturedPgError | undefined } {
  let last: CapturedPgError | undefined;
  return {
    run: async () => {
      try {
        return await fn();
      } catch (err) {
        last = pgErrorOf(err);
        throw err;
      }
    },
    lastError: () => last,
  };
}

/** Appends a deadlock's DETAIL to its message, once. */
function withDetail(err: { code?: string; message?: string; detail?: string } | null | undefined): void {
  if (err?.code === SQLSTATE.deadlock && typeof err.detail === 'string' && typeof err.message === 'string' && !err.message.includes(DETAIL_MARK)) {
    err.message = `${err.message}${DETAIL_MARK}${err.detail}`;
  }
}

/**
 * pg reports a connection that died between two statements (a backend terminated while the client sat in a
 * transaction, a failover) without a SQLSTATE. The client knows its connection is gone: say so with
 * connection_failure, so every layer above can tell "the database went away" from a bug.
 */
function markLostConnection(client: pg.Client, err: { code?: string; severity?: string } | null | undefined): void {
  const state = client as unknown as { _queryable?: boolean; _ended?: boolean };
  if (err && typeof err === 'object' && err.code === undefined && (state._queryable === false || state._ended === true)) {
    err.code = SQLSTATE.connectionFailure;
    err.severity = 'ERROR';
  }
}

export class CapturingClient extends pg.Client {
  // pg's query has many overloads: the promise form (the adapter's, in a transaction) and the callback form (what
  // pg.Pool#query uses for a statement outside a transaction) are both intercepted.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  query(...args: any[]): any {
    const last = args.length ? args[args.length - 1] : undefined;
    if (typeof last === 'function') {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      args[args.length - 1] = (err: any, result: unknown) => {
        markLostConnection(this, err);
        withDetail(err);
        return last(err, result);
      };
    }
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const result = (super.query as any)(...args);
    if (result && typeof result.then === 'function') {
      return result.catch((err: { code?: string; message?: string; detail?: string; severity?: string }) => {
        markLostConnection(this, err);
        withDetail(err);
        throw err;
      });
    }
    return result;
  }
}
