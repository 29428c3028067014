import type { IntentListFilters } from '@/lib/intents/keys';

/** A committed change as the live feed carries it (lib/live/positions.ts). */
export type LiveChange = { intentId: string | null; toStatus: string | null };

/**
 * Whether a page of the list can look different after these changes, from what the events say — so a burst of
 * changes elsewhere does not make every open page re-read its list.
 *
 * - An intent shown on the page changed: its row changes, or it leaves the page (its update moves it to the top).
 * - On the newest page (no cursor), a changed intent goes to the top if it passes the filters: the status filter is
 *   checked from the event; a time range that ended before now keeps it out; a search or a source filter cannot be
 *   checked from an event (it does not carry the payload), so the page re-reads.
 * - Older pages (a cursor) only lose rows to the top; a row from elsewhere never enters them.
 * - Oldest first, a changed intent becomes the newest: it enters only a page that reaches the end of the list, and
 *   never the stuck view (it has just changed).
 */
export function listAffected(filters: IntentListFilters, shownIds: ReadonlySet<string> | null, changes: LiveChange[], now = Date.now()): boolean {
  const withIntent = changes.filter((c) => c.intentId);
  if (withIntent.length === 0) return false;
  // Not loaded yet (or failed): let it load.
  if (!shownIds) return true;
  if (withIntent.some((c) => shownIds.has(c.intentId!))) return true;
  if (filters.cursor) return false;
  if (filters.stuck) return false;
  if (filters.order === 'oldest') return shownIds.size < filters.limit;
  if (filters.to && Date.parse(filters.to) < now) return false;
  if (!filters.status) return true;
  // An event without a status (an edit that kept it) may concern an intent in this status: re-read.
  return withIntent.some((c) => c.toStatus === null || c.toStatus === filters.status);
}
