/**
 * The console's one way of writing a moment: UTC, 24-hour, the same on every page and in every time zone (the
 * server renders it, so there is no hydration mismatch; the intent timeline writes its summaries with it too). Relative
 * times ("3 min ago") are components/ui/RelativeTime.tsx.
 */
type Moment = string | number | Date;

const iso = (t: Moment) => new Date(t).toISOString();

/** "2026-11-23 08:24:05 UTC" (`seconds: false`: "2026-11-23 08:24 UTC"). */
export function formatUtc(t: Moment, { seconds = true }: { seconds?: boolean } = {}): string {
  return `${iso(t).replace('T', ' ').slice(0, seconds ? 19 : 16)} UTC`;
}

/** "08:24:05 UTC": for moments of the last hours, beside a date shown elsewhere or implied. */
export function formatUtcTime(t: Moment): string {
  return `${iso(t).slice(11, 19)} UTC`;
}
