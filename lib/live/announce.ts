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

/**
 * Gap between two notifications from one process. A hub coalesces its rounds over 50 ms (hub.ts), so a burst of
 * commits is announced at most once in that window: a busy worker process would otherwise send a notification, a
 * transaction of its own that queues on the commit lock of NOTIFY, every few milliseconds for nobody's benefit. Work
 * queued meanwhile cuts the gap short to WORK_GAP_MS: an idle worker's pickup must not wait for the hubs' window.
 */
const CHANGES_GAP_MS = 50;
const WORK_GAP_MS = 10;

type AnnounceState = { inFlight: boolean; wanted: boolean; workWanted: boolean; warned: boolean; cutGap: (() => void) | null };
const state = globalThis as unknown as { bridgeAnnounce?: AnnounceState };

/** The gap after a notification: the hubs' window, cut to WORK_GAP_MS from its start once work is queued. */
function gap(s: AnnounceState): Promise<void> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    let timer = setTimeout(done, s.workWanted ? WORK_GAP_MS : CHANGES_GAP_MS);
    function done() {
      clearTimeout(timer);
      s.cutGap = null;
      resolve();
    }
    s.cutGap = () => {
      clearTimeout(timer);
      timer = setTimeout(done, Math.max(0, WORK_GAP_MS - (Date.now() - t0)));
    };
  });
}

/**
 * Call after a commit that wrote audit events (`workQueued` when it may have queued pipeline work: the workers are
 * woken by the same statement). Never throws, never waits.
 */
export function announceCommitted(options: { workQueued?: boolean } = {}): void {
  const s = (state.bridgeAnnounce ??= { inFlight: false, wanted: false, workWanted: false, warned: false, cutGap: null });
  if (options.workQueued) {
    s.workWanted = true;
    s.cutGap?.();
  }
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
        if (s.wanted) await gap(s);
      } while (s.wanted);
    } catch (err) {
      if (!s.warned) console.warn(`[live] could not notify the live hubs (they will read the change within a second anyway): ${oneLineError(err)}`);
      s.warned = true;
    } finally {
      s.inFlight = false;
    }
  })();
}
