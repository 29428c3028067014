import type { IntentStatus } from '@/lib/shared/intent-states';

/** Counts under a search are exact up to this many matches, then shown as "10,000+". */
export const COUNT_CAP = 10_000;

/** The filter bar's counts, as the counts route answers and the live feed carries them. */
export type CountsAnswer = {
  /** Per status; when `capped`, lower bounds (what the first `cap` matches hold). Null: could not count in time. */
  counts: Record<IntentStatus, number> | null;
  /** All statuses together; when `capped`, `cap` (shown as "10,000+"). */
  total: number | null;
  /** Every match counted. */
  exact: boolean;
  /** More than `cap` match: counts are lower bounds. */
  capped: boolean;
  /** Counting took too long: the counts are the planner's estimate (per status in the proportions of all intents). */
  estimated: boolean;
  cap: number;
};

export function exactAnswer(counts: Record<IntentStatus, number>): CountsAnswer {
  return { counts, total: Object.values(counts).reduce((a, b) => a + b, 0), exact: true, capped: false, estimated: false, cap: COUNT_CAP };
}
