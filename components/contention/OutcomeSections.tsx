'use client';

import { useRouter } from 'next/navigation';
import styles from '@/components/locks/console.module.css';
import type { ContentionReport } from '@/lib/contention/queries';
import { NOT_RECORDED, SERIES_KEYS } from '@/lib/contention/series';
import { DimensionChart, OutcomeTimelineChart } from './charts';
import { intentsBehind } from './intents-behind';

type Span = { from: string; to: string };

/** The outcomes over time, per operation and per transition; a click on a bar lists the intents behind it. */
export function OutcomeSections({ report, label, span }: { report: ContentionReport; label: string; span: Span }) {
  const router = useRouter();
  return (
    <>
      <section className={styles.section}>
        <h2>Over time</h2>
        <p className={styles.sectionNote}>
          Per {report.bucketSeconds >= 900 ? '15 minutes' : 'minute'}, UTC. Conflicts include refused stale versions; retries include deadlock retries. Contention replay runs are not counted here (the Replay page has their figures). Click a figure or a bar to list the intents behind it.
        </p>
        {SERIES_KEYS.every((k) => report.totals[k] === 0) ? (
          <div className={styles.empty} data-testid="timeline-empty">
            No conflicts, deadlocks, lock timeouts, retries or already-applied requests in the last {label}.
          </div>
        ) : (
          <OutcomeTimelineChart
            data={report.timeline}
            onSegment={(k, point) => router.push(intentsBehind(k, { from: point.t, to: new Date(Date.parse(point.t) + report.bucketSeconds * 1000).toISOString() }))}
          />
        )}
      </section>

      <div className={styles.grid2}>
        <section className={styles.section}>
          <h2>Per operation</h2>
          <p className={styles.sectionNote}>Status changes one at a time and in bulk, and corrections.</p>
          {report.byOperation.filter((d) => d.total > 0).length === 0 ? (
            <div className={styles.empty}>No contention recorded for any operation in the last {label}.</div>
          ) : (
            <DimensionChart data={report.byOperation.filter((d) => d.total > 0)} testId="chart-operation" onSegment={(k, d) => router.push(intentsBehind(k, span, d.key))} />
          )}
        </section>
        <section className={styles.section}>
          <h2>Per transition</h2>
          <p className={styles.sectionNote}>Transitions are known once a change is applied; refusals, lock timeouts and retries happen {NOT_RECORDED} and are grouped as such.</p>
          {report.byTransition.length === 0 ? (
            <div className={styles.empty}>No status changes recorded in the last {label}.</div>
          ) : (
            <DimensionChart data={report.byTransition} testId="chart-transition" withSuccess onSegment={(k) => router.push(intentsBehind(k, span))} />
          )}
        </section>
      </div>
    </>
  );
}
