import Link from 'next/link';
import styles from '@/components/locks/console.module.css';
import type { ContentionReport } from '@/lib/contention/queries';
import { SERIES, SERIES_KEYS } from '@/lib/contention/series';
import { SERIES_COLORS } from './charts';
import { intentsBehind } from './intents-behind';

type Span = { from: string; to: string };

/** One tile per series over the window; a figure with something behind it opens the intents it happened to. */
export function ContentionTotals({ report, label, span }: { report: ContentionReport; label: string; span: Span }) {
  return (
    <div className={styles.tiles} data-testid="totals">
      {SERIES_KEYS.map((k) => {
        const body = (
          <>
            <div className={styles.statValue} style={{ color: SERIES_COLORS[k] }}>
              {report.totals[k]}
            </div>
            <div className={styles.statLabel}>
              {SERIES[k].label} · last {label}
            </div>
            {report.totals[k] > 0 && <span className="visually-hidden">: show the intents</span>}
          </>
        );
        // A figure with something behind it opens the intents it happened to.
        return report.totals[k] > 0 ? (
          <Link
            key={k}
            href={intentsBehind(k, span)}
            className={`${styles.stat} ${styles.statLink}`}
            data-testid={`total-${k}`}
          >
            {body}
          </Link>
        ) : (
          <div key={k} className={styles.stat} data-testid={`total-${k}`}>
            {body}
          </div>
        );
      })}
    </div>
  );
}
