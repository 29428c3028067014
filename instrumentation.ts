/**
 * Next's start-up hook (Node runtime only): background housekeeping of one console instance. Everything it does
 * is safe with several instances on one database — pruning is an idempotent DELETE, counts flush by upsert.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  const { pruneIdempotencyRecords } = await import('@/lib/intents/idempotency');
  const { flushOutcomes } = await import('@/lib/intents/outcomes');
  const { pruneExpiredSessions } = await import('@/lib/auth/sessions');
  const { pruneSignInAttempts } = await import('@/lib/auth/rate-limit');
  const { db } = await import('@/lib/db/client');

  const prune = () =>
    Promise.all([pruneIdempotencyRecords(), pruneExpiredSessions(), pruneSignInAttempts(db())]).catch((err: unknown) =>
      console.error('[housekeeping] pruning expired keys, sessions or sign-in attempts failed:', err),
    );
  setInterval(prune, 10 * 60_000).unref();

  // Counts are buffered for up to a second: write them before the process goes.
  const flushAndExit = (signal: NodeJS.Signals) => {
    flushOutcomes()
      .catch((err: unknown) => console.error('[housekeeping] final flush of outcome counts failed:', err))
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 0));
  };
  process.once('SIGTERM', flushAndExit);
  process.once('SIGINT', flushAndExit);
}
