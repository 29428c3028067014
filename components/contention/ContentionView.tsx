'use client';

import Link from 'next/link';
import { CONTENTION_BACKOFF } from '@/lib/locks/backoff';
import type { ContentionReport } from '@/lib/contention/queries';
import { formatMs, NOT_RECORDED, operationLabel, SERIES, SERIES_KEYS, WINDOW_KEYS, WINDOWS, type WindowKey } from '@/lib/contention/series';
import styles from '@/components/locks/console.module.css';
import { IntentLinks } from '@/components/locks/IntentLinks';
import { LiveStatus, PressureBanner, useBackoffQuery } from '@/components/locks/live';
import { ErrorState } from '@/components/ui/ErrorState';
import { PageHeader } from '@/components/ui/PageHeader';
import { Skeleton } from '@/components/ui/Skeleton';
import { formatUtc, formatUtcTime } from '@/components/ui/time';
import { DimensionChart, LockWaitChart, OutcomeTimelineChart, SERIES_COLORS } from './charts';

/** Above this the report counts as slow (ms), and the page polls less often. */
const SLOW_REPORT_MS = 1000;

/**
 * The Contention page body: rates over 15 min / 1 h / 24 h (URL-shareable), per operation and transition,
 * lock-wait percentiles, Postgres' deadlock counter beside the application's figures, and recent deadlocks.
 */
export function ContentionView({ window }: { window: WindowKey }) {
  const { query, intervalMs, lastOutcome, backingOff } = useBackoffQuery<ContentionReport>({
    queryKey: ['console', 'contention', window],
    url: `/api/console/contention?window=${window}`,
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

      <PressureBanner intervalMs={intervalMs} lastOutcome={lastOutcome} message={query.error?.kind === 'pressure' ? query.error.message : undefined} staleSince={report?.to} />
      {query.isError && report && query.error.kind !== 'pressure' && (
        <div className={`${styles.banner} ${styles.bannerError}`} role="alert">
          Refresh failed ({query.error.message}); showing the figures as of {formatUtcTime(report.to)}.
        </div>
      )}

      {!report && query.isPending && (
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
      )}
      {!report && query.isError && <ErrorState title="The contention figures could not be loaded" error={query.error} onRetry={() => void query.refetch()} retrying={query.isFetching} />}

      {report && (
        <>
          <div className={styles.tiles} data-testid="totals">
            {SERIES_KEYS.map((k) => (
              <div key={k} className={styles.stat} data-testid={`total-${k}`}>
                <div className={styles.statValue} style={{ color: SERIES_COLORS[k] }}>
                  {report.totals[k]}
                </div>
                <div className={styles.statLabel}>
                  {SERIES[k].label} · last {label}
                </div>
              </div>
            ))}
          </div>

          <section className={styles.section}>
            <h2>Over time</h2>
            <p className={styles.sectionNote}>
              Per {report.bucketSeconds >= 900 ? '15 minutes' : 'minute'}, UTC. Conflicts include refused stale versions; retries include deadlock retries. Contention replay runs are not counted here (the Replay page has their figures).
            </p>
            {SERIES_KEYS.every((k) => report.totals[k] === 0) ? (
              <div className={styles.empty} data-testid="timeline-empty">
                No conflicts, deadlocks, lock timeouts, retries or already-applied requests in the last {label}.
              </div>
            ) : (
              <OutcomeTimelineChart data={report.timeline} />
            )}
          </section>

          <div className={styles.grid2}>
            <section className={styles.section}>
              <h2>Per operation</h2>
              <p className={styles.sectionNote}>update_status, bulk_update_status, reevaluate.</p>
              {report.byOperation.filter((d) => d.total > 0).length === 0 ? (
                <div className={styles.empty}>No contention recorded for any operation in the last {label}.</div>
              ) : (
                <DimensionChart data={report.byOperation.filter((d) => d.total > 0)} testId="chart-operation" />
              )}
            </section>
            <section className={styles.section}>
              <h2>Per transition</h2>
              <p className={styles.sectionNote}>Transitions are known once a change is applied; refusals, lock timeouts and retries happen {NOT_RECORDED} and are grouped as such.</p>
              {report.byTransition.length === 0 ? (
                <div className={styles.empty}>No status changes recorded in the last {label}.</div>
              ) : (
                <DimensionChart data={report.byTransition} testId="chart-transition" withSuccess />
              )}
            </section>
          </div>

          <section className={styles.section}>
            <h2>Lock waits</h2>
            <p className={styles.sectionNote}>
              Percentiles of the time commands waited for their row locks, from the engine’s histogram (interpolated within buckets; the last bound is {formatMs(report.lockWait.lastBoundMs)}).
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
                      <th>samples</th>
                      <th>p50</th>
                      <th>p95</th>
                      <th>p99</th>
                    </tr>
                  </thead>
                  <tbody>
                    {report.lockWait.byOperation.map((o) => (
                      <tr key={o.operation}>
                        <td>{operationLabel(o.operation)}</td>
                        <td>{o.samples}</td>
                        <td>{formatMs(o.p50, o.overflow && o.p50 === report.lockWait.lastBoundMs)}</td>
                        <td>{formatMs(o.p95, o.overflow && o.p95 === report.lockWait.lastBoundMs)}</td>
                        <td>{formatMs(o.p99, o.overflow && o.p99 === report.lockWait.lastBoundMs)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </>
            )}
          </section>

          <section className={styles.section} data-testid="deadlocks">
            <h2>Deadlocks</h2>
            <div className={styles.tiles}>
              <div className={styles.stat} data-testid="deadlocks-app">
                <div className={styles.statValue}>{report.deadlocks.app.inWindow}</div>
                <div className={styles.statLabel}>
                  recorded by the application in the last {label} ({report.deadlocks.app.retriedInWindow} retried) · {report.deadlocks.app.allTime} all time
                </div>
              </div>
              <div className={styles.stat} data-testid="deadlocks-postgres">
                <div className={styles.statValue}>{report.deadlocks.postgres.total}</div>
                <div className={styles.statLabel}>
                  Postgres’ own counter (pg_stat_database.deadlocks)
                  {report.deadlocks.postgres.statsReset ? ` since ${formatUtc(report.deadlocks.postgres.statsReset)}` : ' since the statistics began'}
                  {report.deadlocks.postgres.inWindow && ` · +${report.deadlocks.postgres.inWindow.count} since ${formatUtcTime(report.deadlocks.postgres.inWindow.since)} (seen by this console)`}
                </div>
              </div>
            </div>
            <p className={styles.sectionNote}>
              Postgres counts every deadlock in this database, including ones between sessions the engine does not run; the application records the ones its own commands hit, with Postgres’ detail.
            </p>
            {report.deadlocks.recent.length === 0 ? (
              <div className={styles.empty} data-testid="deadlocks-empty">No deadlocks recorded by the application.</div>
            ) : (
              <table className={styles.table} data-testid="deadlocks-table">
                <thead>
                  <tr>
                    <th>when</th>
                    <th>operation</th>
                    <th>attempt</th>
                    <th>outcome</th>
                    <th>intents</th>
                    <th>Postgres’ detail</th>
                  </tr>
                </thead>
                <tbody>
                  {report.deadlocks.recent.map((d) => (
                    <tr key={d.id}>
                      <td style={{ whiteSpace: 'nowrap' }}>{formatUtc(d.at)}</td>
                      <td>{operationLabel(d.operation)}</td>
                      <td>{d.attempt}</td>
                      <td>{d.retried ? <span className={`${styles.badge} ${styles.badgeOk}`}>retried</span> : <span className={`${styles.badge} ${styles.badgeRoot}`}>gave up</span>}</td>
                      <td>
                        <IntentLinks refs={d.intentIds.map((id) => ({ id, via: null }))} />
                      </td>
                      <td>
                        <pre className={styles.detail}>{d.detail}</pre>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </>
      )}
    </div>
  );
}
