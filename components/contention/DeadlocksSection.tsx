import Link from 'next/link';
import styles from '@/components/locks/console.module.css';
import { IntentLinks } from '@/components/locks/IntentLinks';
import { formatUtc, formatUtcTime } from '@/components/ui/time';
import type { ContentionReport } from '@/lib/contention/queries';
import { operationLabel } from '@/lib/contention/series';
import { intentsBehind } from './intents-behind';

type Span = { from: string; to: string };

/** Deadlocks as the application recorded them and as Postgres counted them, and the most recent ones with Postgres' detail. */
export function DeadlocksSection({ report, label, span }: { report: ContentionReport; label: string; span: Span }) {
  return (
    <section className={styles.section} data-testid="deadlocks">
      <h2>Deadlocks</h2>
      <div className={styles.tiles}>
        <AppDeadlocks report={report} label={label} span={span} />
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
  );
}

/** The application's own deadlock count in the window (and all time); opens the intents they hit. */
function AppDeadlocks({ report, label, span }: { report: ContentionReport; label: string; span: Span }) {
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
    <Link href={intentsBehind('deadlocks', span)} className={`${styles.stat} ${styles.statLink}`} data-testid="deadlocks-app">
      {body}
    </Link>
  ) : (
    <div className={styles.stat} data-testid="deadlocks-app">
      {body}
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
