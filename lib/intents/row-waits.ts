import { poolLockWaiters } from '@/lib/env';
import { DatabaseUnderPressureError } from '@/lib/shared/errors';

/**
 * Bounds on waiting for a held row (docs/LOCKING.md, "Waiting on a held row"). A command waiting on a row lock holds
 * one of this process's pooled connections for as long as it waits (up to its lock timeout), so a row someone keeps
 * locked could otherwise take the whole pool, and with it health, reads and the Locks page. Two bounds live here,
 * in the process, because what they protect is the process's own pool; the third, the waiter places of one intent
 * over every instance, lives in the database (bridge_take_waiter_place), because that is what instances share.
 *
 * 1. Commands of one intent go to the database one at a time from this process (`inTurn`): a burst of identical
 *    requests runs one after the other, none queued on the row. When the one at the database finds the row held by
 *    someone else (`held`), the others of that intent waiting here, and any that arrive while it waits, are refused
 *    at once: one connection of this process waiting on that row is enough.
 * 2. At most `poolLockWaiters()` connections of this process wait on row locks at once (`waitOnRow`); past it a
 *    command is refused at once with 503 db_under_pressure (reason lock_waiters).
 */

/** Refused without waiting: another command of this process already waits on the intent's held row. */
export class RowHeldRefusal extends Error {
  constructor(readonly intentIds: string[]) {
    super(`the row of ${intentIds.join(', ')} is held and a command of this process already waits for it`);
  }
}

/** Waited in this process for the turn of its intent as long as its lock timeout allows, without getting it. */
export class TurnTimedOut extends Error {
  constructor(readonly intentIds: string[]) {
    super(`waited for the turn of ${intentIds.join(', ')} as long as the lock timeout allows`);
  }
}

let waitingNow = 0;

/** How many of this process's connections wait on row locks right now (sent in mode 'wait' and not yet back). */
export function rowWaitersNow(): number {
  return waitingNow;
}

/** Runs `send` (a call in mode 'wait') when the pool has room for another waiter; refuses at once otherwise. */
export async function waitOnRow<R>(send: () => Promise<R>): Promise<R> {
  if (waitingNow >= poolLockWaiters()) throw new DatabaseUnderPressureError('lock_waiters', 1);
  waitingNow++;
  try {
    return await send();
  } finally {
    waitingNow--;
  }
}

type Entry = { go: () => void; refuse: (err: unknown) => void };
type Turn = { held: boolean; queue: Entry[] };
const turns = new Map<string, Turn>();

/**
 * Runs `run` when it is this key's turn in this process (commands of one intent, or one process-wide key). `run`
 * calls `held()` once its call found the row held and is about to wait: everything waiting for the key is then
 * refused with `refusal()`, and so is everything that arrives until `run` ends. Waiting here counts against the
 * caller's lock timeout (`maxWaitMs`): past it, TurnTimedOut, as a lock wait that ran out.
 */
export async function inTurn<R>(key: string, maxWaitMs: number, refusal: () => Error, run: (held: () => void) => Promise<R>): Promise<R> {
  let turn = turns.get(key);
  if (turn) {
    if (turn.held) throw refusal();
    const queue = turn.queue;
    await new Promise<void>((go, refuse) => {
      const timer = setTimeout(() => {
        const at = queue.indexOf(entry);
        if (at >= 0) queue.splice(at, 1);
        refuse(new TurnTimedOut([key]));
      }, maxWaitMs);
      const entry: Entry = {
        go: () => (clearTimeout(timer), go()),
        refuse: (err) => (clearTimeout(timer), refuse(err)),
      };
      queue.push(entry);
    });
  } else {
    turn = { held: false, queue: [] };
    turns.set(key, turn);
  }
  const mine = turn;
  try {
    return await run(() => {
      mine.held = true;
      for (const waiting of mine.queue.splice(0)) waiting.refuse(refusal());
    });
  } finally {
    mine.held = false;
    const next = mine.queue.shift();
    if (next) next.go();
    else turns.delete(key);
  }
}
