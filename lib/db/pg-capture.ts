import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';

/**
 * Prisma's pg adapter keeps a deadlock's SQLSTATE but drops Postgres' DETAIL ("Process 1 waits for ShareLock on
 * transaction 2; blocked by process 3 …"), which the brief wants recorded with each deadlock. The pool's clients
 * note the last server error of the async context that issued the query, before the adapter converts it.
 */
export type CapturedPgError = { code: string; message: string; detail?: string };

const capture = new AsyncLocalStorage<{ last?: CapturedPgError }>();

export function withPgErrorCapture<T>(fn: () => Promise<T>): { run: () => Promise<T>; lastError: () => CapturedPgError | undefined } {
  const store: { last?: CapturedPgError } = {};
  return { run: () => capture.run(store, fn), lastError: () => store.last };
}

export class CapturingClient extends pg.Client {
  // pg's query has many overloads; only the promise form (the adapter's) is intercepted.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  query(...args: any[]): any {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const result = (super.query as any)(...args);
    const store = capture.getStore();
    if (store && result && typeof result.then === 'function') {
      return result.catch((err: { code?: string; message?: string; detail?: string }) => {
        if (typeof err?.code === 'string') store.last = { code: err.code, message: String(err.message), detail: err.detail };
        throw err;
      });
    }
    return result;
  }
}
