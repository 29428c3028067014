import styles from './ui.module.css';

/** Placeholder while a panel loads: announced once to screen readers, grey bars for everyone else. */
export function Skeleton({ label = 'Loading', lines = 3, height }: { label?: string; lines?: number; height?: number }) {
  return (
    <div className={styles.skeleton} role="status" aria-live="polite" aria-busy="true" style={height ? { minHeight: height } : undefined}>
      <span className="visually-hidden">{label}…</span>
      {Array.from({ length: lines }, (_, i) => (
        <span key={i} className={styles.skeletonLine} style={{ width: `${92 - ((i * 17) % 40)}%` }} aria-hidden="true" />
      ))}
    </div>
  );
}

/** A table-shaped skeleton for list panels. */
export function TableSkeleton({ label = 'Loading', rows = 8, columns = 6 }: { label?: string; rows?: number; columns?: number }) {
  return (
    <div className={styles.tableSkeleton} role="status" aria-live="polite" aria-busy="true">
      <span className="visually-hidden">{label}…</span>
      {Array.from({ length: rows }, (_, r) => (
        <div key={r} className={styles.tableSkeletonRow} aria-hidden="true">
          {Array.from({ length: columns }, (_, c) => (
            <span key={c} className={styles.skeletonLine} style={{ width: `${50 + ((r * 13 + c * 29) % 45)}%` }} />
          ))}
        </div>
      ))}
    </div>
  );
}
