'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import type { ReactNode } from 'react';
import { ErrorState } from '@/components/ui/ErrorState';
import styles from '@/components/locks/console.module.css';
import { PageHeader } from '@/components/ui/PageHeader';
import { Skeleton } from '@/components/ui/Skeleton';
import { formatUtc } from '@/components/ui/time';
import { eventKeys, fetchOutboxStatus } from '@/lib/console/events-client';
import type { OutboxStatus } from '@/lib/events/status';

/** "1.2 s", "3 min": how far behind the relays are. */
export function formatLag(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/**
 * Events out: the outbox relay's backlog and lag, and which relays own which partitions, polled every 2 s; then
 * `children` (the page's browser of recent events, rendered on the server).
 */
export function EventsView({ children }: { children?: ReactNode }) {
  const query = useQuery({ queryKey: eventKeys.status(), queryFn: fetchOutboxStatus, refetchInterval: 2_000 });
  const s = query.data;
  return (
    <>
      <PageHeader
        title="Events"
        description={
          <>
            Changes other services care about leave through the transactional outbox to NATS JetStream
            {s && (
              <>
                {' '}
                (stream <code>{s.stream.name}</code>, subjects{' '}
                {s.stream.subjects.map((subject, i) => (
                  <span key={subject}>
                    {i > 0 && ', '}
                    <code>{subject}</code>
                  </span>
                ))}
                )
              </>
            )}
            . <Link href="/docs/events">What the events carry →</Link>
          </>
        }
      />
      {query.error && <ErrorState title="Could not read the outbox" error={query.error} onRetry={() => void query.refetch()} />}
      {query.isPending && <Skeleton label="Loading the outbox" lines={3} height={180} />}
      {s && (
        <>
          {/* Off only when nobody relays: this instance without NATS_URL, and no relay of another process connected. */}
          {!s.relayConfigured && s.relays.length === 0 && (
            <div role="status" className={`${styles.banner} ${styles.bannerInfo}`}>
              No relay is connected and this console has no <code>NATS_URL</code>, so nothing is published and events wait in the outbox. Set it for
              the console and the workers (each runs a relay), or run <code>npm run relay</code>, to publish them, oldest first.
            </div>
          )}
          <OutboxTiles s={s} />
          <RelaysSection s={s} />
        </>
      )}
      {children}
    </>
  );
}

/** The outbox at a glance: events waiting, the lag of the oldest, what went out in the last minute, and the relays. */
function OutboxTiles({ s }: { s: OutboxStatus }) {
  return (
    <div className={styles.tiles} aria-label="Outbox relay">
      <div className={styles.stat} title="Committed events not yet acknowledged by NATS JetStream">
        <div className={styles.statValue} data-testid="outbox-backlog">
          {s.backlog.toLocaleString('en')}
          {s.backlogCapped ? '+' : ''}
        </div>
        <div className={styles.statLabel}>event{s.backlog === 1 ? '' : 's'} waiting</div>
      </div>
      <div className={styles.stat} title={s.backlog ? `Oldest waiting since ${formatUtc(s.oldestUnpublishedAt!)}` : 'Everything committed is published'}>
        <div className={styles.statValue} data-testid="outbox-lag">
          {s.backlog ? formatLag(s.lagMs) : 'none'}
        </div>
        <div className={styles.statLabel}>lag{s.backlog ? ` · oldest since ${formatUtc(s.oldestUnpublishedAt!)}` : ''}</div>
      </div>
      <div className={styles.stat}>
        <div className={styles.statValue}>{s.publishedLastMinute.toLocaleString('en')}</div>
        <div className={styles.statLabel}>published in the last minute</div>
      </div>
      <div className={styles.stat}>
        <div className={styles.statValue} data-testid="outbox-relays">
          {s.relays.length}
        </div>
        <div className={styles.statLabel}>
          {s.relays.length
            ? `relay${s.relays.length === 1 ? '' : 's'} sharing ${s.partitions} partitions`
            : s.relayConfigured
              ? 'relays: none yet (starting, or NATS unreachable)'
              : 'relays: off'}
        </div>
      </div>
    </div>
  );
}

/** Which relay (a backend holding partition locks) publishes which partitions. */
function RelaysSection({ s }: { s: OutboxStatus }) {
  return (
    <section className={styles.section} aria-labelledby="relays-heading">
      <h2 id="relays-heading">Relays</h2>
      <p className={styles.sectionNote}>
        Each relay publishes the partitions it holds, in commit order per intent. Last published: {s.lastPublishedAt ? formatUtc(s.lastPublishedAt) : 'never'}.
      </p>
      {s.relays.length === 0 ? (
        <div className={styles.empty}>No relay is connected.</div>
      ) : (
        <table className={styles.table}>
          <thead>
            <tr>
              <th scope="col">Backend pid</th>
              <th scope="col">Since</th>
              <th scope="col">Client</th>
              <th scope="col">Partitions</th>
            </tr>
          </thead>
          <tbody>
            {s.relays.map((r) => (
              <tr key={r.pid}>
                <td>{r.pid}</td>
                <td>{r.startedAt ? formatUtc(r.startedAt) : '—'}</td>
                <td>{r.clientAddr ?? 'local'}</td>
                <td>{r.partitions.length ? r.partitions.join(', ') : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
