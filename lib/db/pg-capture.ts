import pg from 'pg';
import { SQLSTATE, sqlState } from './sqlstate';

/**
 * What the database said when it refused a statement: its SQLSTATE, its message and, where it sent one, its DETAIL
 * ("Process 1 waits for ShareLock on transaction 2; blocked by process 3 …" for a deadlock), which an on-call
 * engineer needs recorded with each deadlock.
 *
 * `pg` puts every field Postgres sends on the error itself (`code`, `detail`, `hint`, …). Prisma's driver adapter
 * keeps the SQLSTATE and the message but not a deadlock's DETAIL, which is why the transactions that may deadlock run
 * through `pg` (queryOnPool, transactionOnPool in ./client) rather than db().$transaction.
 */
export type CapturedPgError = { code: string; message: string; detail?: string };

type Carrier = { message?: unknown; detail?: unknown; originalMessage?: unknown; cause?: unknown; meta?: { driverAdapterError?: { cause?: { originalMessage?: unknown } } } };

/** The server error behind `err` (a plain pg error, a Prisma error or a DriverAdapterError), with its DETAIL when it has one. */
export function pgErrorOf(err: unknown): CapturedPgError | undefined {
  const code = sqlState(err);
  if (!code) return undefined;
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const e = current as Carrier;
    if (current instanceof pg.DatabaseError) {
      return typeof e.detail === 'string' ? { code, message: current.message, detail: e.detail } : { code, message: current.message };
    }
    const text = e.meta?.driverAdapterError?.cause?.originalMessage ?? e.originalMessage;
    if (typeof text === 'string') return { code, message: text };
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

/**
 * The pool's client class. `pg` reports a connection that died between two statements (a backend terminated while
 * the client sat in a transaction, a failover) without a SQLSTATE, as "Client has encountered a connection error and
 * is not queryable". The client heard the connection go (its public 'error' and 'end' events): it says so with
 * connection_failure, so every layer above can tell "the database went away" from a bug.
 */
export class CapturingClient extends pg.Client {
  private connectionGone = false;

  constructor(config?: string | pg.ClientConfig) {
    super(config);
    const gone = () => {
      this.connectionGone = true;
    };
    this.once('end', gone);
    // Listening does not swallow the error: the pool has its own listener, which logs and discards the client.
    this.on('error', gone);
  }

  private markLostConnection(err: { code?: string; severity?: string } | null | undefined): void {
    if (this.connectionGone && err && typeof err === 'object' && err.code === undefined) {
      err.code = SQLSTATE.connectionFailure;
      err.severity = 'ERROR';
    }
  }

  // pg's query has many overloads: the promise form (the adapter's, in a transaction) and the callback form (what
  // pg.Pool#query uses for a statement outside a transaction) are both intercepted.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  query(...args: any[]): any {
    const last = args.length ? args[args.length - 1] : undefined;
    if (typeof last === 'function') {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      args[args.length - 1] = (err: any, result: unknown) => {
        this.markLostConnection(err);
        return last(err, result);
      };
    }
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const result = (super.query as any)(...args);
    if (result && typeof result.then === 'function') {
      return result.catch((err: { code?: string; severity?: string }) => {
        this.markLostConnection(err);
        throw err;
      });
    }
    return result;
  }
}
