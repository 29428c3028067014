'use client';

import { useEffect, useState } from 'react';
import { useRowHolders } from '@/components/locks/RowLockNotice';
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

/** How long past the lock timeout a change may still be unanswered before the page says the server may be out of reach. */
const NO_ANSWER_GRACE_MS = 5_000;

/**
 * A status change or correction that takes longer than a moment is usually waiting for a row lock another
 * transaction holds (the database makes it wait up to the lock timeout). Say what it waits for, instead of leaving
 * dimmed buttons: the row lock when the intents' rows are held (`intentIds`, asked of the database once it takes
 * long), else the server's answer (a slow or broken network says nothing about locks), and, once even the lock
 * timeout is long past, that the server may be out of reach. A polite live region that is always in the page, so
 * screen readers announce the text when it appears.
 */
export function LockWaitNotice({ pending, lockTimeoutMs, plural = false, intentIds }: { pending: boolean; lockTimeoutMs?: number; plural?: boolean; intentIds?: readonly string[] }) {
  const waiting = usePendingLongerThan(pending);
  const overdueAfter = (lockTimeoutMs && lockTimeoutMs > 0 ? lockTimeoutMs : 5_000) + NO_ANSWER_GRACE_MS;
  const overdue = usePendingLongerThan(pending, overdueAfter);
  const held = useRowHolders(waiting && intentIds ? intentIds : []).size > 0;
  const text = overdue
    ? `Still no answer after ${Math.round(overdueAfter / 1000)} s: the server may be out of reach or very busy. Nothing is known to have been applied; this page says so when the answer comes.`
    : !intentIds || held
      ? lockWaitText(lockTimeoutMs, plural)
      : 'Waiting for the server’s answer…';
  return (
    <div aria-live="polite" data-testid="lock-wait">
      {waiting && (
        <p className={styles.lockWait}>
          <span className={styles.spinner} aria-hidden="true" />
          {text}
        </p>
      )}
    </div>
  );
}
