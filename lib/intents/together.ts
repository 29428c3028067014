import { SQLSTATE, sqlState } from '@/lib/db/sqlstate';
import { DatabaseUnderPressureError } from '@/lib/shared/errors';
import { RowHeldRefusal, waitOnRow } from './row-waits';
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
 * A batch first asks for the row lock only if it is free ('try'). When the row is held by someone else, the batch
 * waits for it (with a place in the pool's share of waiters, lib/intents/row-waits.ts) and the corrections waiting
 * here for the intent, and those that arrive while it waits, are refused at once: one connection of this process
 * waiting on that row is enough (docs/LOCKING.md, "Waiting on a held row").
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

/** Intents whose call at the database waits on a row someone else holds: their other corrections are refused. */
const held = new Set<string>();

/** How many corrections of the intent wait in this process for its call at the database to return. */
export function waitingTogether(intentId: string): number {
  return waiting.get(intentId)?.length ?? 0;
}

/** A correction, together with the others of its intent that meet it in this process (see above). */
export function correctInTurn(args: CorrectArgs): Promise<CorrectionRow> {
  // An optimistic try ('none') goes at once when nothing of its intent is at the database, as its point is; when
  // something is, it waits for it like the others, so this process never finds its own call holding the row.
  if (held.has(args.id)) return Promise.reject(new RowHeldRefusal([args.id]));
  return new Promise((resolve, reject) => {
    const now = Date.now();
    const entry: Waiting = { args, since: now, deadline: now + args.lockTimeoutMs, resolve, reject };
    const queue = waiting.get(args.id);
    if (queue) {
      queue.push(entry);
      return;
    }
    const waitingHere: Waiting[] = [];
    waiting.set(args.id, waitingHere);
    void drain(args.id, waitingHere, [entry]);
  });
}

/** Sends batches for the intent until nothing waits; `queue` is the intent's entry in `waiting` while it runs. */
async function drain(intentId: string, queue: Waiting[], first: Waiting[]): Promise<void> {
  let batch = first;
  while (batch.length) {
    const again = await send(batch, queue);
    batch = [...again, ...queue.splice(0, MAX_TOGETHER - again.length)];
  }
  waiting.delete(intentId);
}

/** The batch's row is held by someone else: refuse what waits here for it, and wait for it with the batch. */
async function waitForHeldRow(intentId: string, queue: Waiting[], list: CorrectArgs[]): Promise<CorrectionRow[]> {
  held.add(intentId);
  for (const w of queue.splice(0)) w.reject(new RowHeldRefusal([intentId]));
  try {
    return await waitOnRow(() => correctTogether(list.map((args) => ({ ...args, lock: 'wait' as const }))));
  } finally {
    held.delete(intentId);
  }
}

/** One call for the batch; answers the corrections that must go again (their lock wait ran out, their time did not). */
async function send(batch: Waiting[], queue: Waiting[]): Promise<Waiting[]> {
  const now = Date.now();
  const together = batch.length > 1;
  const list = batch.map(({ args, deadline }) => ({
    ...args,
    // More than one at once is contention: an adaptive correction takes the row lock at once, as after a conflict.
    // Only if it is free, though: waiting for a held row is decided below.
    lock: args.lock === 'wait' || (together && args.lock === 'adaptive') ? ('try' as const) : args.lock,
    lockTimeoutMs: Math.max(1, deadline - now),
  }));
  try {
    const rows = await correctTogether(list).catch((err: unknown) => (sqlState(err) === SQLSTATE.rowBusy ? waitForHeldRow(batch[0].args.id, queue, list) : Promise.reject(err)));
    // The time a correction waited here was a wait for the row lock too.
    batch.forEach((w, i) => w.resolve({ ...rows[i], lockWaitMs: rows[i].lockWaitMs + (now - w.since) }));
    return [];
  } catch (err) {
    // A cancel ends the whole batch; so does a refusal to wait for a held row (no place free), which holds for all.
    if (!together || sqlState(err) === SQLSTATE.queryCanceled || sqlState(err) === SQLSTATE.rowWaitersFull || err instanceof DatabaseUnderPressureError) {
      for (const w of batch) w.reject(err);
      return [];
    }
    if (sqlState(err) === SQLSTATE.lockNotAvailable) {
      const at = Date.now();
      for (const w of batch) if (w.deadline <= at) w.reject(err);
      return batch.filter((w) => w.deadline > at);
    }
    for (const w of batch) {
      const lock = w.args.lock === 'wait' ? ('try' as const) : w.args.lock;
      await correctTogether([{ ...w.args, lock, lockTimeoutMs: Math.max(1, w.deadline - Date.now()) }]).then(([row]) => w.resolve(row), w.reject);
    }
    return [];
  }
}
