'use client';

import Link from 'next/link';
import { contentionKeys, contentionReportUrl } from '@/lib/console/contention-client';
import { CONTENTION_BACKOFF } from '@/lib/locks/backoff';
import type { ContentionReport } from '@/lib/contention/queries';
import { SERIES, SERIES_KEYS, WINDOW_KEYS, WINDOWS, type WindowKey } from '@/lib/contention/series';
import styles from '@/components/locks/console.module.css';
import { LiveStatus, PressureBanner, useBackoffQuery } from '@/components/locks/live';
import { ErrorState } from '@/components/ui/ErrorState';
import { PageHeader } from '@/components/ui/PageHeader';
import { Skeleton } from '@/components/ui/Skeleton';
import { formatUtcTime } from '@/components/ui/time';
import { ContentionTotals } from './ContentionTotals';
import { DeadlocksSection } from './DeadlocksSection';
import { LockWaitSection } from './LockWaitSection';
import { OutcomeSections } from './OutcomeSections';

/** Above this the report counts as slow (ms), and the page polls less often. */
const SLOW_REPORT_MS = 1000;

/**
 * The Contention page body: rates over 15 min / 1 h / 24 h (URL-shareable), per operation and transition,
 * lock-wait percentiles, Postgres' deadlock counter beside the application's figures, and recent deadlocks.
 */
export function ContentionView({ window }: { window: WindowKey }) {
  const { query, intervalMs, lastOutcome, backingOff } = useBackoffQuery<ContentionReport>({
    queryKey: contentionKeys.report(window),
    url: contentionReportUrl(window),
    policy: CONTENTION_BACKOFF,
    isSlow: (r) => r.tookMs > SLOW_REPORT_MS,
  });
  const report = query.data;
  const label = WINDOWS[window].label;

  return (
    <div className={styles.page}>
      <PageHeader
        title="Contention"
        description="What concurrency cost the engine: conflicts, deadlocks, lock timeouts, retries, and how long locks were waited for."
        actions={
          <div className={styles.toolbar}>
            <LiveStatus intervalMs={intervalMs} lastOutcome={lastOutcome} backingOff={backingOff} fetching={query.isFetching} updatedAt={query.dataUpdatedAt} />
            <nav className={styles.tabs} aria-label="Time window">
              {WINDOW_KEYS.map((k) => (
                <Link key={k} href={`/contention?window=${k}`} className={`${styles.tab} ${k === window ? styles.tabActive : ''}`} aria-current={k === window ? 'page' : undefined}>
                  {WINDOWS[k].label}
                </Link>
              ))}
            </nav>
            <button type="button" className="btn btn-sm" onClick={() => void query.refetch()} disabled={query.isFetching}>
              Refresh now
            </button>
          </div>
        }
      />

      <PressureBanner intervalMs={intervalMs} lastOutcome={lastOutcome} message={query.error?.isPressure ? query.error.message : undefined} staleSince={report?.to} />
      {query.isError && report && !query.error.isPressure && (
        <div className={`${styles.banner} ${styles.bannerError}`} role="alert">
          Refresh failed ({query.error.message}); showing the figures as of {formatUtcTime(report.to)}.
        </div>
      )}
      {!report && query.isPending && <ContentionSkeleton />}
      {!report && query.isError && <ErrorState title="The contention figures could not be loaded" error={query.error} onRetry={() => void query.refetch()} retrying={query.isFetching} />}
      {report && <ContentionSections report={report} label={label} />}
    </div>
  );
}

function ContentionSections({ report, label }: { report: ContentionReport; label: string }) {
  const span = { from: report.from, to: report.to };
  return (
    <>
      <ContentionTotals report={report} label={label} span={span} />
      <OutcomeSections report={report} label={label} span={span} />
      <LockWaitSection report={report} label={label} span={span} />
      <DeadlocksSection report={report} label={label} span={span} />
    </>
  );
}

function ContentionSkeleton() {
  return (
    <>
      <div className={styles.tiles}>
        {SERIES_KEYS.map((k) => (
          <div key={k} className={styles.stat}>
            <Skeleton lines={2} label={`Loading ${SERIES[k].label}`} />
          </div>
        ))}
      </div>
      <section className={styles.section}>
        <Skeleton lines={8} label="Loading charts" height={260} />
      </section>
    </>
  );
}
