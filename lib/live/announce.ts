import { Prisma } from '@/generated/prisma/client';
import { queryOnPool } from '@/lib/db/client';
import { oneLineError } from '@/lib/db/pg-capture';

/**
 * Wakes every console instance's live hub (hub.ts) after something committed: `pg_notify('bridge_changes')`, sent
 * after the writing transaction has committed, in a statement of its own, and at most one at a time per process
 * (the commits of a burst share one notification). On the pool directly, not through Prisma: under load this runs
 * up to a hundred times a second.
 *
 * Why not a trigger inside the writing transaction, as the first version had: a transaction that notifies takes a
 * database-wide lock when it commits and holds it through its WAL flush, so every status update's commit queued
 * behind every other's and group commit could not help. The benchmark measured the cost:
 * docs/bench/2026-11-23-engine.md.
 *
 * A notification is only a wake-up call; the rows are the truth. One that is lost (this process dies between the
 * commit and the notify, or the database refuses it) costs a delay, not an event: each hub also reads the table
 * on its own every second.
 */
export const CHANGES_CHANNEL = 'bridge_changes';

/**
 * Wakes idle workers (lib/workers/wakeup.ts) when something may have queued pipeline work: a new intent, an intent
 * back at RECEIVED, claiming resumed, claims given back. Sent the same way, after the commit: a trigger sending it
 * would put every intent's creation behind the commit lock described above.
 */
export const WORK_CHANNEL = 'bridge_work';

/** Gap between two notifications from one process: a hub coalesces its rounds anyway (50 ms). */
const MIN_GAP_MS = 10;

const state = globalThis as unknown as { bridgeAnnounce?: { inFlight: boolean; wanted: boolean; workWanted: boolean; warned: boolean } };

/**
 * Call after a commit that wrote audit events (`workQueued` when it may have queued pipeline work: the workers are
 * woken by the same statement). Never throws, never waits.
 */
export function announceCommitted(options: { workQueued?: boolean } = {}): void {
  const s = (state.bridgeAnnounce ??= { inFlight: false, wanted: false, workWanted: false, warned: false });
  if (options.workQueued) s.workWanted = true;
  if (s.inFlight) {
    s.wanted = true;
    return;
  }
  s.inFlight = true;
  void (async () => {
    try {
      do {
        s.wanted = false;
        const work = s.workWanted;
        s.workWanted = false;
        await queryOnPool(
          work ? Prisma.sql`SELECT pg_notify(${CHANGES_CHANNEL}, ''), pg_notify(${WORK_CHANNEL}, '')` : Prisma.sql`SELECT pg_notify(${CHANGES_CHANNEL}, '')`,
        );
        s.warned = false;
        if (s.wanted) await new Promise((resolve) => setTimeout(resolve, MIN_GAP_MS));
      } while (s.wanted);
    } catch (err) {
      if (!s.warned) console.warn(`[live] could not notify the live hubs (they will read the change within a second anyway): ${oneLineError(err)}`);
      s.warned = true;
    } finally {
      s.inFlight = false;
    }
  })();
}
