'use client';

import { useEffect, useState } from 'react';
import styles from './intents.module.css';

/** How long an operation may take before the page says it is probably queued behind another transaction's lock. */
export const LOCK_WAIT_NOTICE_AFTER_MS = 400;

/** True once `pending` has lasted `afterMs` without a break. */
export function usePendingLongerThan(pending: boolean, afterMs = LOCK_WAIT_NOTICE_AFTER_MS): boolean {
  const [slow, setSlow] = useState(false);
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => setSlow(true), afterMs);
    return () => {
      clearTimeout(timer);
      setSlow(false);
    };
  }, [pending, afterMs]);
  return pending && slow;
}

export function lockWaitText(lockTimeoutMs: number | undefined, plural = false): string {
  const holds = plural ? 'another transaction holds one of these intents' : 'another transaction holds this intent';
  if (lockTimeoutMs && lockTimeoutMs > 0) {
    const limit = lockTimeoutMs % 1000 === 0 ? `${lockTimeoutMs / 1000} s` : lockTimeoutMs < 1000 ? `${lockTimeoutMs} ms` : `${(lockTimeoutMs / 1000).toFixed(1)} s`;
    return `Waiting for the row lock${plural ? 's' : ''}… (${holds}; gives up after ${limit})`;
  }
  return `Waiting for the row lock${plural ? 's' : ''}… (${holds}; gives up when the lock timeout runs out)`;
}

/**
 * A status change or correction that takes longer than a moment is almost always waiting for a row lock another
 * transaction holds (the database makes it wait up to the lock timeout). Say so, instead of leaving dimmed buttons:
 * a polite live region that is always in the page, so screen readers announce the text when it appears.
 */
export function LockWaitNotice({ pending, lockTimeoutMs, plural = false }: { pending: boolean; lockTimeoutMs?: number; plural?: boolean }) {
  const waiting = usePendingLongerThan(pending);
  return (
    <div aria-live="polite" data-testid="lock-wait">
      {waiting && (
        <p className={styles.lockWait}>
          <span className={styles.spinner} aria-hidden="true" />
          {lockWaitText(lockTimeoutMs, plural)}
        </p>
      )}
    </div>
  );
}
