/** The Events page's URL for a filter combination (and a page cursor): shareable, and parsed by the route's schema. */
export const EVENTS_FILTER_KEYS = ['type', 'state', 'intent'] as const;
type EventsUrlKey = (typeof EVENTS_FILTER_KEYS)[number] | 'cursor';

export function eventsHref(filters: Partial<Record<EventsUrlKey, string | undefined>>): string {
  const params = new URLSearchParams();
  for (const key of [...EVENTS_FILTER_KEYS, 'cursor'] as const) {
    const value = filters[key];
    if (value) params.set(key, value);
  }
  const qs = params.toString();
  return qs ? `/events?${qs}` : '/events';
}

/**
 * The first value of each known key, empty values dropped (a submitted empty field means "any"); the values are
 * checked by the list itself (lib/events/recent.ts), which names a bad one.
 */
export function eventsParams(search: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of [...EVENTS_FILTER_KEYS, 'cursor'] as const) {
    const raw = search[key];
    const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
    if (value) out[key] = value;
  }
  return out;
}
