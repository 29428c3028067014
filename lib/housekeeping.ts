import { pruneExpiredSessions } from '@/lib/auth/sessions';
import { pruneSignInAttempts } from '@/lib/auth/rate-limit';
import { startStatusFolding } from '@/lib/counts/status-counts';
import { db } from '@/lib/db/client';
import { pruneIdempotencyRecords } from '@/lib/intents/idempotency';
import { flushOutcomes } from '@/lib/intents/outcomes';

/**
 * Background housekeeping of one console instance (started by instrumentation.ts, Node runtime only). Everything
 * it does is safe with several instances on one database — pruning is an idempotent DELETE, counts flush by upsert.
 */
export function startHousekeeping(): void {
  const prune = () =>
    Promise.all([pruneIdempotencyRecords(), pruneExpiredSessions(), pruneSignInAttempts(db())]).catch((err: unknown) =>
      console.error('[housekeeping] pruning expired keys, sessions or sign-in attempts failed:', err),
    );
  setInterval(prune, 10 * 60_000).unref();
  startStatusFolding();

  // Counts are buffered for up to a second: write them before the process goes.
  const flushAndExit = (signal: NodeJS.Signals) => {
    flushOutcomes()
      .catch((err: unknown) => console.error('[housekeeping] final flush of outcome counts failed:', err))
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 0));
  };
  process.once('SIGTERM', flushAndExit);
  process.once('SIGINT', flushAndExit);
}
