import pg from 'pg';
import { directDatabaseUrl } from '@/lib/db/client';
import { oneLineError } from '@/lib/db/pg-capture';
import { WORK_CHANNEL } from '@/lib/live/announce';
import { backoffDelayMs } from '@/lib/shared/backoff';

/**
 * Wakes idle workers when work may have been queued (announceCommitted's `workQueued`, lib/live/announce.ts): one
 * connection per process LISTENs on the work channel, however many workers the process runs, and calls each of
 * them. A notification is only a wake-up call: the queue's rows are the truth, and every worker still polls
 * (WORKER_POLL_MS), so a notification lost while the connection is down costs a poll's delay, not work. The
 * connection comes back with backoff. LISTEN needs the database itself, not PgBouncer (directDatabaseUrl).
 */
type Listener = { wake: Set<() => void>; client: pg.Client | null; attempt: number; timer: NodeJS.Timeout | null; stopped: boolean };

const globalForWakeup = globalThis as unknown as { bridgeWorkListener?: Listener };

const RECONNECT = { factor: 2, baseMs: 250, jitterMs: 100, maxDelayMs: 30_000 };

function connect(l: Listener, log: (line: string) => void): void {
  if (l.stopped) return;
  const client = new pg.Client({ connectionString: directDatabaseUrl(), application_name: 'bridge:worker-wakeup', keepAlive: true });
  l.client = client;
  const lost = (why: unknown) => {
    if (l.client !== client) return;
    l.client = null;
    client.end().catch(() => undefined);
    if (l.stopped) return;
    const delay = backoffDelayMs(++l.attempt, RECONNECT);
    log(`wake-up connection lost (${oneLineError(why)}); polling meanwhile, reconnecting in ${delay} ms`);
    l.timer = setTimeout(() => connect(l, log), delay);
    l.timer.unref();
  };
  client.on('error', lost);
  client.on('end', () => lost('connection ended'));
  client.on('notification', () => {
    for (const wake of l.wake) wake();
  });
  client
    .connect()
    .then(() => client.query(`LISTEN ${WORK_CHANNEL}`))
    .then(() => {
      l.attempt = 0;
      // Whatever was queued while nobody listened is found by the claim this wake-up starts.
      for (const wake of l.wake) wake();
    })
    .catch(lost);
}

/** Calls `wake` whenever work may have been queued; the returned function unsubscribes (the last one closes the connection). */
export function onWorkQueued(wake: () => void, log: (line: string) => void): () => Promise<void> {
  let l = globalForWakeup.bridgeWorkListener;
  if (!l || l.stopped) {
    l = globalForWakeup.bridgeWorkListener = { wake: new Set(), client: null, attempt: 0, timer: null, stopped: false };
    connect(l, log);
  }
  const listener = l;
  listener.wake.add(wake);
  return async () => {
    listener.wake.delete(wake);
    if (listener.wake.size > 0) return;
    listener.stopped = true;
    if (listener.timer) clearTimeout(listener.timer);
    const client = listener.client;
    listener.client = null;
    await client?.end().catch(() => undefined);
  };
}
