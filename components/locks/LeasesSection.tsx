'use client';

import { useQuery } from '@tanstack/react-query';
import { IntentLinks } from './IntentLinks';
import { formatUtcTime } from '@/components/ui/time';
import { fetchLeases, leaseKeys, type LeasesAnswer } from '@/lib/console/leases-client';
import styles from './console.module.css';

const REFRESH_MS = 5_000;
const EDIT_LEASE = /^intent:([0-9a-f-]{36}):edit$/;

/** A resource named after an intent's edit lease links to that intent. */
function Resource({ resource }: { resource: string }) {
  const edit = EDIT_LEASE.exec(resource);
  return edit ? (
    <span>
      edit of <IntentLinks refs={[{ id: edit[1], via: null }]} />
    </span>
  ) : (
    <span className={styles.mono}>{resource}</span>
  );
}

/**
 * Lease locks beside the Postgres locks: the live leases (owner, the user who took it, fencing token, expiry) of
 * whichever backend is configured, and the newest lease events (acquired, denied, refreshed, released, expired) from
 * the event log, each with the user who acted. The owner is a name the caller chose; the user is who they are, so
 * the two are shown apart. Viewers get no tokens from the server: the column is left out for them.
 */
export function LeasesSection() {
  const query = useQuery({ queryKey: leaseKeys.all, queryFn: fetchLeases, refetchInterval: REFRESH_MS });
  const data = query.data;
  const tokens = !!data && [...data.leases, ...data.events].some((row) => row.token !== null);
  return (
    <section className={styles.section} aria-labelledby="leases-title" data-testid="leases-section">
      <h2 id="leases-title">Leases</h2>
      <p className={styles.sectionNote}>
        Lease locks{data ? ` (${data.backend} backend)` : ''}: cooperative, time-limited, each grant with a fencing token that writes protected by the lease check. Reviewers’ edit
        leases show who is correcting which intent.
      </p>
      {query.isError && !data && <div className={`${styles.banner} ${styles.bannerError}`} role="alert">The leases could not be loaded: {query.error.message}</div>}
      {data && (
        // Side by side only while leases are held: beside the empty note, the events got half the width and their
        // owners' names wrapped a word a line.
        <div className={data.leases.length > 0 ? styles.grid2 : undefined}>
          <div className={styles.scroll}>
            <HeldLeases leases={data.leases} tokens={tokens} />
          </div>
          <div className={styles.scroll}>
            <LeaseEvents events={data.events} tokens={tokens} />
          </div>
        </div>
      )}
    </section>
  );
}

/** The leases held now; `tokens`: whether this viewer may see fencing tokens. */
function HeldLeases({ leases, tokens }: { leases: LeasesAnswer['leases']; tokens: boolean }) {
  return leases.length === 0 ? (
    <div className={styles.empty}>No lease is held.</div>
  ) : (
    <table className={styles.table} data-testid="leases-table">
      <caption className={styles.hint}>Held now</caption>
      <thead>
        <tr>
          <th>resource</th>
          <th>owner</th>
          <th>taken by</th>
          {tokens && <th>token</th>}
          <th>since</th>
          <th>until</th>
        </tr>
      </thead>
      <tbody>
        {leases.map((l) => (
          <tr key={l.resource}>
            <td className={styles.wrap}>
              <Resource resource={l.resource} />
            </td>
            <td className={styles.wrap}>{l.owner}</td>
            <td className={styles.wrap} data-testid="lease-actor">{l.actor ?? '—'}</td>
            {tokens && <td className={styles.mono}>{l.token ?? '—'}</td>}
            <td className={styles.nowrap}>{l.acquiredAt ? formatUtcTime(l.acquiredAt) : '—'}</td>
            <td className={styles.nowrap}>{formatUtcTime(l.expiresAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The newest lease events, each with the user who acted. */
function LeaseEvents({ events, tokens }: { events: LeasesAnswer['events']; tokens: boolean }) {
  return events.length === 0 ? (
    <div className={styles.empty}>No lease events yet.</div>
  ) : (
    <table className={styles.table} data-testid="lease-events-table">
      <caption className={styles.hint}>Newest events</caption>
      <thead>
        <tr>
          <th>at</th>
          <th>event</th>
          <th>resource</th>
          <th>owner</th>
          <th>by</th>
          {tokens && <th>token</th>}
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.id}>
            <td className={styles.nowrap}>{formatUtcTime(e.at)}</td>
            <td>{e.event}</td>
            <td className={styles.wrap}>
              <Resource resource={e.resource} />
            </td>
            <td className={styles.wrap}>{e.event === 'denied' ? `${e.owner} (held by ${e.holder})` : (e.owner ?? '—')}</td>
            <td className={styles.wrap}>{e.actor ?? '—'}</td>
            {tokens && <td className={styles.mono}>{e.token ?? '—'}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
