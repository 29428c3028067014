/**
 * How often a live console view polls, given how the last refresh went. Healthy and fast: the base interval.
 * Slow (SLOW_ANSWERS_IN_A_ROW snapshots in a row took longer than SLOW_SNAPSHOT_MS): half again as long. Refused as under pressure, or
 * failed: twice as long, up to the ceiling. Recovering: halves back toward the base, one step per good refresh,
 * so a flapping database is not hammered the moment it answers once.
 */
/** Above this a snapshot counts as slow (its `tookMs`), and the page refreshes less often. */
export const SLOW_SNAPSHOT_MS = 300;

/**
 * How many slow answers in a row make the database "slow". One is not enough: the first snapshot of a page often
 * pays for a cold connection (hundreds of ms on an idle database, then tens), and declaring pressure on that alone
 * cries wolf. Refusals and errors still back off at once: they are the database saying so itself.
 */
export const SLOW_ANSWERS_IN_A_ROW = 2;

/** The outcome of an answer that arrived, given how many slow ones came just before it. */
export function answerOutcome(slow: boolean, slowBefore: number): { outcome: RefreshOutcome; slowInARow: number } {
  const slowInARow = slow ? slowBefore + 1 : 0;
  return { outcome: slowInARow >= SLOW_ANSWERS_IN_A_ROW ? 'slow' : 'ok', slowInARow };
}

export type RefreshOutcome = 'ok' | 'slow' | 'pressure' | 'error';

export type BackoffPolicy = { baseMs: number; maxMs: number };
export const LOCKS_BACKOFF: BackoffPolicy = { baseMs: 2_000, maxMs: 30_000 };
export const CONTENTION_BACKOFF: BackoffPolicy = { baseMs: 15_000, maxMs: 120_000 };

export function nextInterval(currentMs: number, outcome: RefreshOutcome, policy: BackoffPolicy): number {
  const current = Math.min(Math.max(currentMs, policy.baseMs), policy.maxMs);
  switch (outcome) {
    case 'pressure':
    case 'error':
      return Math.min(current * 2, policy.maxMs);
    case 'slow':
      return Math.min(Math.round(current * 1.5), policy.maxMs);
    case 'ok':
      return Math.max(Math.round(current / 2), policy.baseMs);
  }
}

/** True when the view is refreshing less often than it would on a healthy database. */
export function isBackingOff(intervalMs: number, policy: BackoffPolicy): boolean {
  return intervalMs > policy.baseMs;
}
