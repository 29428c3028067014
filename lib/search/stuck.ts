/**
 * The stuck view's duration, as the URL and the API write it: minutes, hours or days (`30m`, `4h`, `2d`), up to
 * about a year. Pure: the browser builds the view's links with it, the server its condition.
 */
export const STUCK_DURATION = /^(?:[1-9]\d{0,5}m|[1-9]\d{0,3}h|[1-9]\d{0,2}d)$/;

/** A stuck duration in minutes. */
export function stuckMinutes(duration: string): number {
  const n = Number(duration.slice(0, -1));
  return duration.endsWith('d') ? n * 1440 : duration.endsWith('h') ? n * 60 : n;
}

/** The durations the Intents page offers for its stuck view. */
export const STUCK_CHOICES = ['15m', '1h', '4h', '1d'] as const;
