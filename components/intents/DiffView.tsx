import { inlineJson, type DiffLine } from '@/lib/console/json-diff';
import styles from './intents.module.css';

/**
 * A change as a diff: per field, the old value (−, when known) and the new one (+). `beforeKnown: false` marks a
 * line whose earlier value was not recorded anywhere (the first correction of a field set at creation).
 */
export function DiffView({ lines, label }: { lines: (DiffLine & { beforeKnown?: boolean })[]; label: string }) {
  if (lines.length === 0) return <p className="muted">No field changes (the values were already there).</p>;
  return (
    <div className={styles.diff} role="group" aria-label={label} data-testid="diff">
      {lines.map((l) => (
        <div key={l.path}>
          {l.beforeKnown !== false && l.before !== undefined && (
            <div className={`${styles.diffLine} ${styles.diffDel}`}>
              <span aria-label="removed">−</span>
              <span>
                {l.path}: {inlineJson(l.before)}
              </span>
            </div>
          )}
          <div className={`${styles.diffLine} ${styles.diffAdd}`}>
            <span aria-label="added">+</span>
            <span>
              {l.path}: {inlineJson(l.after)}
            </span>
          </div>
        </div>
      ))}
    </div>
  );
}
