import type { IntentStatus } from '@/lib/shared/intent-states';
import styles from './ui.module.css';

/** An intent status as a coloured pill (colour is never the only cue: the name is always written). */
export function StatusBadge({ status }: { status: IntentStatus }) {
  return (
    <span className={`${styles.status} ${styles[`status_${status}`]}`} data-status={status}>
      {status}
    </span>
  );
}
