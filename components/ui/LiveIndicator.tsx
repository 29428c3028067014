'use client';

import { useLiveState } from '@/components/live/LiveProvider';
import styles from './ui.module.css';

/**
 * Whether the page is receiving changes as they commit: Live, Reconnecting (the stream dropped, or the server
 * lost its database listener), Paused (by the page, e.g. while rows are selected), or Off (signed out).
 */
export function LiveIndicator({ paused = false, pausedReason, pending = 0 }: { paused?: boolean; pausedReason?: string; pending?: number }) {
  const { connection, serverListening } = useLiveState();
  let tone: 'live' | 'warn' | 'idle' = 'idle';
  let label = 'Connecting…';
  let detail = 'Opening the live stream';
  if (connection === 'off') {
    label = 'Not live';
    detail = 'Sign in to receive live updates';
  } else if (connection === 'reconnecting' || (connection === 'live' && !serverListening)) {
    tone = 'warn';
    label = 'Reconnecting…';
    detail = connection === 'live' ? 'The server is reconnecting to the database; changes will follow' : 'The live stream dropped; resuming from the last change received';
  } else if (connection === 'live' && paused) {
    tone = 'idle';
    label = pending > 0 ? `Paused · ${pending} update${pending === 1 ? '' : 's'} waiting` : 'Paused';
    detail = pausedReason ?? 'Live refresh is paused';
  } else if (connection === 'live') {
    tone = 'live';
    label = 'Live';
    detail = 'Changes from every console instance appear as they commit';
  }
  return (
    <span className={`${styles.live} ${styles[`live_${tone}`]}`} role="status" aria-live="polite" title={detail} data-testid="live-indicator" data-state={paused && connection === 'live' ? 'paused' : connection}>
      <span className={styles.liveDot} aria-hidden="true" />
      {label}
    </span>
  );
}
