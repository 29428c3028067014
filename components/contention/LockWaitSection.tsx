import Link from 'next/link';
import styles from '@/components/locks/console.module.css';
import type { ContentionReport } from '@/lib/contention/queries';
import { formatMs, formatPercentile, operationLabel } from '@/lib/contention/series';
import { LockWaitChart } from './charts';
import { intentsBehind } from './intents-behind';

type Span = { from: string; to: string };

/** Lock-wait percentiles per operation, from the engine's histogram, with the timed-out waits linked to their intents. */
export function LockWaitSection({ report, label, span }: { report: ContentionReport; label: string; span: Span }) {
  return (
    <section className={styles.section}>
      <h2>Lock waits</h2>
      <p className={styles.sectionNote}>
        Percentiles of the time commands waited for their row locks, from the engine’s histogram (interpolated within buckets; the last bound is {formatMs(report.lockWait.lastBoundMs)}).
        Waits that ran out (lock timeouts) count as waits of at least their timeout: a percentile that falls on them reads “≥”.
      </p>
      {report.lockWait.byOperation.length === 0 ? (
        <div className={styles.empty}>No lock waits recorded in the last {label}.</div>
      ) : (
        <>
          <LockWaitChart data={report.lockWait.timeline} />
          <table className={styles.table} data-testid="lock-wait-table">
            <thead>
              <tr>
                <th>operation</th>
                <th>waits</th>
                <th>of which timed out</th>
                <th>p50</th>
                <th>p95</th>
                <th>p99</th>
              </tr>
            </thead>
            <tbody>
              {report.lockWait.byOperation.map((o) => (
                <tr key={o.operation} data-testid={`lock-wait-${o.operation}`}>
                  <td>{operationLabel(o.operation)}</td>
                  <td>{o.samples}</td>
                  <td>
                    {o.timedOut > 0 ? (
                      <Link href={intentsBehind('lockTimeouts', span, o.operation)} aria-label={`${o.timedOut} timed out: show the intents`}>
                        {o.timedOut}
                      </Link>
                    ) : (
                      0
                    )}
                  </td>
                  <td>{formatPercentile(o, 'p50', report.lockWait.lastBoundMs)}</td>
                  <td>{formatPercentile(o, 'p95', report.lockWait.lastBoundMs)}</td>
                  <td>{formatPercentile(o, 'p99', report.lockWait.lastBoundMs)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
