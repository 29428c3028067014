'use client';

import { useQuery, type QueryKey } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { answerOutcome, isBackingOff, nextInterval, type BackoffPolicy, type RefreshOutcome } from '@/lib/locks/backoff';
import { formatUtcTime } from '@/components/ui/time';
import { ApiError, getJson } from '@/lib/console/api-client';
import styles from './console.module.css';

/**
 * Polling plumbing shared by the Locks and Contention pages: a visible backoff and the status line that says it.
 * (Skeletons and error states are the shell's, components/ui.)
 */

/**
 * Polls `url`, lengthening the interval when answers are slow (two in a row), refused as under pressure, or failed, and
 * shortening it again step by step once the database answers promptly (lib/locks/backoff.ts).
 */
export function useBackoffQuery<T>(options: { queryKey: QueryKey; url: string; policy: BackoffPolicy; isSlow: (data: T) => boolean }) {
  const { policy } = options;
  const [intervalMs, setIntervalMs] = useState(policy.baseMs);
  const [lastOutcome, setLastOutcome] = useState<RefreshOutcome | null>(null);
  const slowInARow = useRef(0);
  const query = useQuery<T, ApiError>({
    queryKey: options.queryKey,
    queryFn: async ({ signal }) => {
      try {
        const data = await getJson<T>(options.url, signal);
        const { outcome, slowInARow: streak } = answerOutcome(options.isSlow(data), slowInARow.current);
        slowInARow.current = streak;
        setLastOutcome(outcome);
        setIntervalMs((ms) => nextInterval(ms, outcome, policy));
        return data;
      } catch (err) {
        if (err instanceof ApiError) {
          const outcome = err.isPressure ? 'pressure' : 'error';
          slowInARow.current = 0;
          setLastOutcome(outcome);
          setIntervalMs((ms) => nextInterval(ms, outcome, policy));
        }
        throw err;
      }
    },
    refetchInterval: intervalMs,
    refetchIntervalInBackground: false,
    // The backoff is the retry policy: a failed refresh is tried again at the next (longer) interval.
    retry: false,
  });
  return { query, intervalMs, lastOutcome, backingOff: isBackingOff(intervalMs, policy) };
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** "Live · every 2 s", or the backoff said out loud. */
export function LiveStatus({ intervalMs, lastOutcome, backingOff, fetching, updatedAt }: { intervalMs: number; lastOutcome: RefreshOutcome | null; backingOff: boolean; fetching: boolean; updatedAt: number }) {
  const down = lastOutcome === 'pressure' || lastOutcome === 'error';
  const dot = down ? styles.dotDown : backingOff ? styles.dotSlow : '';
  const text = down
    ? lastOutcome === 'pressure'
      ? `database under pressure — refreshing every ${seconds(intervalMs)}`
      : `refresh failed — retrying every ${seconds(intervalMs)}`
    : backingOff
      ? `database slow — refreshing every ${seconds(intervalMs)}`
      : `live · refreshing every ${seconds(intervalMs)}`;
  return (
    <span className={styles.live} data-testid="live-status" aria-live="polite">
      <span className={`${styles.dot} ${dot}`} aria-hidden />
      {text}
      {updatedAt > 0 && <span className={styles.hint}> · updated {formatUtcTime(updatedAt)}</span>}
      {fetching && <span className={styles.hint}> · refreshing…</span>}
    </span>
  );
}

export function PressureBanner({ intervalMs, lastOutcome, message, staleSince }: { intervalMs: number; lastOutcome: RefreshOutcome | null; message?: string; staleSince?: string }) {
  if (lastOutcome !== 'pressure' && lastOutcome !== 'slow') return null;
  return (
    <div className={`${styles.banner} ${styles.bannerWarn}`} role="status" data-testid="pressure-banner">
      <strong>{lastOutcome === 'pressure' ? 'Database under pressure' : 'Database slow'} — refreshing every {seconds(intervalMs)}.</strong>{' '}
      {lastOutcome === 'pressure'
        ? (message ?? 'The last snapshot gave up within its own short timeouts.')
        : 'The last snapshots were slow, so this page is polling less often.'}{' '}
      It speeds up again once the database answers promptly.
      {lastOutcome === 'pressure' && staleSince && <> Showing the last snapshot that succeeded, taken {formatUtcTime(staleSince)}.</>}
    </div>
  );
}
