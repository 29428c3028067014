import { pruneExpiredSessions } from '@/lib/auth/sessions';
import { pruneSignInAttempts } from '@/lib/auth/rate-limit';
import { startStatusFolding } from '@/lib/counts/status-counts';
import { db } from '@/lib/db/client';
import { maintainAllPartitions } from '@/lib/db/partitions';
import { engineEventsWritten } from '@/lib/intents/engine-events';
import { pruneIdempotencyRecords } from '@/lib/intents/idempotency';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { dedupStore } from '@/lib/dedup/store';
import { env } from '@/lib/env';
import { sweepLeases } from '@/lib/leases/service';
import { startLockSampler, stopLockSampler } from '@/lib/locks/history/sampler';

/**
 * Background housekeeping of one console instance (started by instrumentation.ts, Node runtime only). Everything
 * it does is safe with several instances on one database — pruning is an idempotent DELETE, counts flush by upsert,
 * and the history tables' partitions are maintained by one instance at a time.
 */
export function startHousekeeping(): void {
  const prune = () =>
    Promise.all([pruneIdempotencyRecords(), pruneExpiredSessions(), pruneSignInAttempts(db())]).catch((err: unknown) =>
      console.error('[housekeeping] pruning expired keys, sessions or sign-in attempts failed:', err),
    );
  setInterval(prune, 10 * 60_000).unref();
  startStatusFolding();

  // Leases that ran out without anyone asking for them again get their `expired` event here (the lazy half is in
  // acquire); dedup keys are purged with the rest.
  const sweep = () => sweepLeases().catch((err: unknown) => console.error('[housekeeping] lease sweep failed:', err));
  setInterval(sweep, env().LEASE_SWEEP_INTERVAL_MS).unref();
  const purgeDedupKeys = () => dedupStore().purge().catch((err: unknown) => console.error('[housekeeping] purging dedup keys failed:', err));
  setInterval(purgeDedupKeys, 10 * 60_000).unref();

  // Partitioned history (audit by month; lease and engine events, per-intent outcomes and the lock history by day):
  // the periods ahead are created and expired ones retired, by one instance at a time (the database function takes an
  // advisory lock the others skip on). This is how old rows of these tables leave: whole partitions, no DELETE. At
  // start too: after consoles were down past the periods ahead, the rows the catch-all partition took move to theirs.
  const partitions = () =>
    maintainAllPartitions()
      .then((reports) => {
        for (const r of reports.filter((x) => x.created.length || x.retired.length)) {
          console.warn(`[housekeeping] ${r.table}: partitions created ${r.created.join(', ') || 'none'}; retired ${r.retired.join(', ') || 'none'}`);
        }
      })
      .catch((err: unknown) => console.error('[housekeeping] maintaining history partitions failed:', err));
  void partitions();
  setInterval(partitions, 10 * 60_000).unref();

  // The lock history: every instance stands by, one (per database) samples; see docs/LOCKING.md.
  startLockSampler();

  // Counts are buffered for up to a second, and engine events may be under way: write them before the process goes.
  const flushAndExit = (signal: NodeJS.Signals) => {
    Promise.all([flushOutcomes(), engineEventsWritten(), stopLockSampler()])
      .catch((err: unknown) => console.error('[housekeeping] final flush of outcome counts failed:', err))
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 0));
  };
  process.once('SIGTERM', flushAndExit);
  process.once('SIGINT', flushAndExit);
}
