'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { intentsHref } from '@/lib/console/filters';
import { CONTENTION_BACKOFF } from '@/lib/locks/backoff';
import type { ContentionReport } from '@/lib/contention/queries';
import { formatMs, formatPercentile, NOT_RECORDED, operationLabel, SERIES, SERIES_KEYS, WINDOW_KEYS, WINDOWS, type SeriesKey, type WindowKey } from '@/lib/contention/series';
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
 * The Intents page on the intents behind a figure: those that met one of the series' outcomes in the span (and the
 * operation, when the figure is one operation's). Absolute instants, so the link shows the same intents when shared.
 */
export function intentsBehind(series: SeriesKey, span: { from: string; to: string }, operation?: string): string {
  return intentsHref({ contention: series, contentionOperation: operation ?? null, contentionFrom: span.from, contentionTo: span.to });
}

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
  const router = useRouter();
  const span = report ? { from: report.from, to: report.to } : null;

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
                  href={intentsBehind(k, span!)}
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
                <DimensionChart data={report.byOperation.filter((d) => d.total > 0)} testId="chart-operation" onSegment={(k, d) => router.push(intentsBehind(k, span!, d.key))} />
              )}
            </section>
            <section className={styles.section}>
              <h2>Per transition</h2>
              <p className={styles.sectionNote}>Transitions are known once a change is applied; refusals, lock timeouts and retries happen {NOT_RECORDED} and are grouped as such.</p>
              {report.byTransition.length === 0 ? (
                <div className={styles.empty}>No status changes recorded in the last {label}.</div>
              ) : (
                <DimensionChart data={report.byTransition} testId="chart-transition" withSuccess onSegment={(k) => router.push(intentsBehind(k, span!))} />
              )}
            </section>
          </div>

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
                            <Link href={intentsBehind('lockTimeouts', span!, o.operation)} aria-label={`${o.timedOut} timed out: show the intents`}>
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

          <section className={styles.section} data-testid="deadlocks">
            <h2>Deadlocks</h2>
            <div className={styles.tiles}>
              {(() => {
                const body = (
                  <>
                    <div className={styles.statValue}>{report.deadlocks.app.inWindow}</div>
                    <div className={styles.statLabel}>
                      recorded by the application in the last {label} ({report.deadlocks.app.retriedInWindow} retried) · {report.deadlocks.app.allTime} all time
                    </div>
                    {report.deadlocks.app.inWindow > 0 && <span className="visually-hidden">: show the intents</span>}
                  </>
                );
                return report.deadlocks.app.inWindow > 0 ? (
                  <Link href={intentsBehind('deadlocks', span!)} className={`${styles.stat} ${styles.statLink}`} data-testid="deadlocks-app">
                    {body}
                  </Link>
                ) : (
                  <div className={styles.stat} data-testid="deadlocks-app">
                    {body}
                  </div>
                );
              })()}
              <PostgresDeadlocks pg={report.deadlocks.postgres} />
            </div>
            <p className={styles.sectionNote}>
              Postgres counts every deadlock in this database, including ones between sessions the engine does not run; the application records the ones its own commands hit, with Postgres’ detail.
              Contention replay runs provoke deadlocks on purpose: each run notes Postgres’ counter when it starts and ends, and what runs added is taken out here.
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

/**
 * Postgres' own deadlock counter with the replay runs' share taken out: what the database saw that a release
 * engineer did not provoke on purpose. The raw counter and what was subtracted stay readable beside it.
 */
function PostgresDeadlocks({ pg }: { pg: ContentionReport['deadlocks']['postgres'] }) {
  const since = pg.statsReset ? `since ${formatUtc(pg.statsReset)}` : 'since the statistics began';
  return (
    <div className={styles.stat} data-testid="deadlocks-postgres">
      <div className={styles.statValue} data-testid="deadlocks-postgres-outside-replay">
        {pg.outsideReplay}
      </div>
      <div className={styles.statLabel}>
        counted by Postgres {since}, replay runs taken out
        {pg.inWindowOutsideReplay && ` · +${pg.inWindowOutsideReplay.count} since ${formatUtcTime(pg.inWindowOutsideReplay.since)} (seen by this console)`}
      </div>
      <div className={styles.statLabel} data-testid="deadlocks-postgres-raw">
        Postgres’ own counter (pg_stat_database.deadlocks): {pg.total}
        {pg.replay.runs > 0 ? `, of which ${pg.replay.deadlocks} during ${pg.replay.runs} replay run${pg.replay.runs === 1 ? '' : 's'}` : ', no replay runs to take out'}
        {pg.replay.unmeasuredRuns > 0 &&
          `; ${pg.replay.unmeasuredRuns} earlier run${pg.replay.unmeasuredRuns === 1 ? '' : 's'} could not be taken out (no counter snapshot)`}
      </div>
    </div>
  );
}
