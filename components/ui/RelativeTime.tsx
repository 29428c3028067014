'use client';

import { useSyncExternalStore } from 'react';
import { formatUtc } from './time';

/** One shared clock for every relative time on the page, ticking every 15 s. */
let clockNow = 0;
const clockListeners = new Set<() => void>();
let clockTimer: ReturnType<typeof setInterval> | null = null;

function subscribeClock(fn: () => void) {
  clockNow = Date.now();
  clockListeners.add(fn);
  clockTimer ??= setInterval(() => {
    clockNow = Date.now();
    for (const l of clockListeners) l();
  }, 15_000);
  return () => {
    clockListeners.delete(fn);
    if (clockListeners.size === 0 && clockTimer) {
      clearInterval(clockTimer);
      clockTimer = null;
    }
  };
}

function relative(iso: string, now: number): string {
  const seconds = Math.round((now - Date.parse(iso)) / 1000);
  if (seconds < 10) return 'just now';
  if (seconds < 60) return `${seconds}s ago`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}

/** "3 min ago", with the exact UTC time on hover; the server renders the exact time (no hydration mismatch). */
export function RelativeTime({ iso }: { iso: string }) {
  const exact = formatUtc(iso);
  const now = useSyncExternalStore(
    subscribeClock,
    () => (clockNow ||= Date.now()),
    () => 0,
  );
  return (
    <time dateTime={iso} title={exact}>
      {now === 0 ? exact : relative(iso, Math.max(now, Date.parse(iso)))}
    </time>
  );
}
