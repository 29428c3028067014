import Link from 'next/link';
import styles from '@/components/locks/console.module.css';
import { formatUtc, formatUtcTime } from '@/components/ui/time';
import { shortId } from '@/lib/console/ids';
import type { WorkersOverview } from '@/lib/workers/queries';
import type { Pending } from './useWorkerControls';

/**
 * The intents the queue holds right now: claimed, waiting for a retry, or waiting for an answer from outside (those
 * out of attempts: components/pipeline/RerunFailedList.tsx).
 */

function IntentLink({ id }: { id: string }) {
  return (
    <Link href={`/intents/${id}`} className={styles.mono} title={id}>
      {shortId(id)}
    </Link>
  );
}

export function ClaimsTable({ data }: { data: WorkersOverview }) {
  return (
    <section className={styles.section} aria-labelledby="workers-claims">
      <h2 id="workers-claims">Claims in flight</h2>
      {data.claims.length === 0 ? (
        <div className={styles.empty}>No claims in flight.</div>
      ) : (
        <table className={styles.table}>
          <thead>
            <tr>
              <th>intent</th>
              <th>worker</th>
              <th>attempt</th>
              <th>lease until</th>
            </tr>
          </thead>
          <tbody>
            {data.claims.map((c) => (
              <tr key={c.intentId}>
                <td>
                  <IntentLink id={c.intentId} />
                </td>
                <td className={styles.mono}>{c.claimedBy}</td>
                <td>
                  {c.attempt} / {c.maxAttempts}
                </td>
                <td className="nowrap">
                  {c.leaseUntil ? formatUtcTime(c.leaseUntil) : '—'} {c.stale && <span className={`${styles.badge} ${styles.badgeRoot}`}>stale</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Scheduled retries, each with "retry now" and "cancel" for operators (`onAsk` opens the confirmation). */
export function ScheduledTable({ data, disabled, title, onAsk }: { data: WorkersOverview; disabled: boolean; title?: string; onAsk: (pending: Pending) => void }) {
  return (
    <section className={styles.section} aria-labelledby="workers-scheduled">
      <h2 id="workers-scheduled">Scheduled retries</h2>
      {data.scheduled.length === 0 ? (
        <div className={styles.empty}>Nothing is waiting for a retry.</div>
      ) : (
        <table className={styles.table}>
          <thead>
            <tr>
              <th>intent</th>
              <th>attempt</th>
              <th>due</th>
              <th>last error</th>
              <th>
                <span className="visually-hidden">actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {data.scheduled.map((s) => (
              <tr key={s.intentId}>
                <td>
                  <IntentLink id={s.intentId} />
                </td>
                <td>
                  {s.attempt} / {s.maxAttempts}
                </td>
                <td className="nowrap">{formatUtcTime(s.runAfter)}</td>
                <td className="wrap">{s.lastError ?? '—'}</td>
                <td className="nowrap">
                  <button type="button" className="btn btn-sm" disabled={disabled} title={title} onClick={() => onAsk({ kind: 'retry-now', intentId: s.intentId })}>
                    Retry now
                  </button>{' '}
                  <button type="button" className="btn btn-sm btn-danger" disabled={disabled} title={title} onClick={() => onAsk({ kind: 'cancel', intentId: s.intentId })}>
                    Cancel
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

const THEN: Record<WorkersOverview['waits'][number]['onTimeout'], string> = { fail: 'fail the intent', retry: 'fail the attempt, ask again', continue: 'go on with the default' };

/** Intents whose bridge waits for an answer (no worker held): what for, and until when. Answered from the intent page or the API. */
export function WaitsTable({ data }: { data: WorkersOverview }) {
  return (
    <section className={styles.section} aria-labelledby="workers-waits">
      <h2 id="workers-waits">Waiting for an answer</h2>
      {data.waits.length === 0 ? (
        <div className={styles.empty}>No intent waits for an answer.</div>
      ) : (
        <table className={styles.table}>
          <thead>
            <tr>
              <th>intent</th>
              <th>bridge</th>
              <th>waits for</th>
              <th>until</th>
              <th>then</th>
            </tr>
          </thead>
          <tbody>
            {data.waits.map((w) => (
              <tr key={w.id}>
                <td>
                  <IntentLink id={w.intentId} />
                </td>
                <td className={styles.mono}>{w.bridge}</td>
                <td className="wrap" title={w.prompt ?? undefined}>
                  <span className={styles.mono}>{w.name}</span>
                </td>
                <td className="nowrap">
                  {/* A deadline may be days away: the date too. */}
                  <time dateTime={w.deadline}>{formatUtc(w.deadline, { seconds: false })}</time>
                </td>
                <td className="wrap">{THEN[w.onTimeout]}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
