'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { fetchRowHolders, lockKeys } from '@/lib/console/locks-client';
import { formatDuration } from '@/lib/locks/format';
import type { RowLockHolder as RowHolder } from '@/lib/locks/holders';
import styles from './console.module.css';

/** How often the row-lock holders of what is on screen are asked for (only while the tab is visible). */
const POLL_MS = 3000;

/** The backends holding these intents' rows now, polled while the page is open: a stuck row is visible where people look. */
export function useRowHolders(ids: readonly string[]): Map<string, RowHolder> {
  const key = [...ids].sort();
  const query = useQuery({
    queryKey: lockKeys.holders(key),
    queryFn: () => fetchRowHolders(key),
    enabled: key.length > 0,
    // Always read afresh when asked for newly (a change that has started waiting asks whether the row is held now).
    staleTime: 0,
    refetchInterval: POLL_MS,
    retry: false,
  });
  return new Map((query.data ?? []).map((h) => [h.intentId, h]));
}

/**
 * "locked by pid 4242 for 2 min 05 s → Locks": links to the holder on the Locks page, with its unblock panel open
 * (`?pid=`), which names the intent rows it holds even while nobody waits for them.
 */
export function RowLockBadge({ holder, compact = false }: { holder: RowHolder; compact?: boolean }) {
  const age = holder.transactionAgeMs === null ? null : formatDuration(holder.transactionAgeMs);
  const title = `${holder.applicationName || 'no application name'} · ${holder.state ?? 'unknown state'}${age ? ` · transaction open for ${age}` : ''}`;
  return (
    <Link href={`/locks?pid=${holder.pid}#session-${holder.pid}`} className={`${styles.badge} ${styles.badgeWait}`} data-testid="row-lock" data-pid={holder.pid} title={title}>
      {compact ? `locked · pid ${holder.pid}${age ? ` · ${age}` : ''}` : `Locked by pid ${holder.pid}${age ? ` for ${age}` : ''} → Locks`}
    </Link>
  );
}

export function RowLockNotice({ intentId }: { intentId: string }) {
  const holder = useRowHolders([intentId]).get(intentId);
  if (!holder) return null;
  return (
    <p className={styles.rowLockNotice} role="status">
      <RowLockBadge holder={holder} /> <span className={styles.hint}>A change now waits for this backend (up to the lock timeout).</span>
    </p>
  );
}
