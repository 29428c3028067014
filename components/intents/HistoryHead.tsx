import type { ReactNode } from 'react';
import { RelativeTime } from '@/components/ui/RelativeTime';
import styles from './intents.module.css';

/** The head line of one entry in an intent's history: who, when, then what moved (versions, statuses). */
export function HistoryHead({ actor, at, children }: { actor: string; at: string; children?: ReactNode }) {
  return (
    <div className={styles.historyHead}>
      <strong>{actor}</strong>
      <span className="muted">
        <RelativeTime iso={at} />
      </span>
      {children}
    </div>
  );
}
