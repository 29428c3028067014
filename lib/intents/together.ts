import { SQLSTATE, sqlState } from '@/lib/db/sqlstate';
import { correctTogether, type CorrectArgs, type CorrectionRow } from './statements';

/**
 * Corrections of one intent that meet in this process go to the database together. While a correction of an intent
 * is at the database, later ones of the same intent that would take its row lock wait here, not each on a pooled
 * connection queued on the row; when that call returns, everything that waited goes in one call
 * (bridge_correct_together): one transaction, one row lock, one commit, each correction still checked and written
 * on its own, in arrival order. Under contention the row lock then changes hands once per batch instead of once per
 * correction, and each hand-over (a waiting backend woken, scheduled, its commit flushed) is what a hot intent's
 * corrections spend their time on, the more so on a busy machine (docs/LOCKING.md).
 *
 * Lock timeouts stay each caller's own: time spent waiting here counts against it. A batch whose lock wait ran out
 * fails only the corrections whose own time is up; the others go again with what they have left. Any other failure
 * of a batch is not allowed to become its neighbours' failure: each of its corrections goes again alone.
 */
type Waiting = { args: CorrectArgs; since: number; deadline: number; resolve: (row: CorrectionRow) => void; reject: (err: unknown) => void };

/** At most this many corrections in one call: bounds how long one transaction holds the row. */
const MAX_TOGETHER = 50;

/** Per intent with a call at the database: the corrections waiting for it (empty while none wait). */
const waiting = new Map<string, Waiting[]>();

/** How many corrections of the intent wait in this process for its call at the database to return. */
export function waitingTogether(intentId: string): number {
  return waiting.get(intentId)?.length ?? 0;
}

/** A correction, together with the others of its intent that meet it in this process (see above). */
export function correctInTurn(args: CorrectArgs): Promise<CorrectionRow> {
  // An optimistic try takes no row lock: there is nothing to queue for, and its point is to go at once.
  if (args.lock === 'none') return correctTogether([args]).then(([row]) => row);
  return new Promise((resolve, reject) => {
    const now = Date.now();
    const entry: Waiting = { args, since: now, deadline: now + args.lockTimeoutMs, resolve, reject };
    const queue = waiting.get(args.id);
    if (queue) {
      queue.push(entry);
      return;
    }
    waiting.set(args.id, []);
    void drain(args.id, [entry]);
  });
}

async function drain(intentId: string, first: Waiting[]): Promise<void> {
  let batch = first;
  while (batch.length) {
    const again = await send(batch);
    const queue = waiting.get(intentId) ?? [];
    batch = [...again, ...queue.splice(0, MAX_TOGETHER - again.length)];
  }
  waiting.delete(intentId);
}

/** One call for the batch; answers the corrections that must go again (their lock wait ran out, their time did not). */
async function send(batch: Waiting[]): Promise<Waiting[]> {
  const now = Date.now();
  const together = batch.length > 1;
  const list = batch.map(({ args, deadline }) => ({
    ...args,
    // More than one at once is contention: an adaptive correction takes the row lock at once, as after a conflict.
    lock: together && args.lock === 'adaptive' ? ('wait' as const) : args.lock,
    lockTimeoutMs: Math.max(1, deadline - now),
  }));
  try {
    const rows = await correctTogether(list);
    // The time a correction waited here was a wait for the row lock too.
    batch.forEach((w, i) => w.resolve({ ...rows[i], lockWaitMs: rows[i].lockWaitMs + (now - w.since) }));
    return [];
  } catch (err) {
    if (!together || sqlState(err) === SQLSTATE.queryCanceled) {
      for (const w of batch) w.reject(err);
      return [];
    }
    if (sqlState(err) === SQLSTATE.lockNotAvailable) {
      const at = Date.now();
      for (const w of batch) if (w.deadline <= at) w.reject(err);
      return batch.filter((w) => w.deadline > at);
    }
    for (const w of batch) await correctTogether([{ ...w.args, lockTimeoutMs: Math.max(1, w.deadline - Date.now()) }]).then(([row]) => w.resolve(row), w.reject);
    return [];
  }
}
