'use client';

import Link from 'next/link';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { EpisodeBackend, EpisodeTree } from '@/lib/locks/history/fold';
import type { EpisodeWithSamples } from '@/lib/locks/history/episodes';
import { formatDuration } from '@/lib/locks/format';
import type { BlockingNode } from '@/lib/locks/types';
import { formatUtcTime } from '@/components/ui/time';
import { ErrorState } from '@/components/ui/ErrorState';
import { Skeleton } from '@/components/ui/Skeleton';
import type { ApiError } from '@/lib/console/api-client';
import { fetchEpisode, lockKeys } from '@/lib/console/locks-client';
import styles from './console.module.css';
import { IntentLinks } from './IntentLinks';

/** How often the history re-reads an episode still going on (and the list of episodes). */
export const HISTORY_REFRESH_MS = 5000;

/**
 * One blocking episode of the lock history, opened: its root blocker, the tree at each sample (scrubbable), every
 * waiter seen, the locks involved, and the lock timeouts, deadlocks and unblocks recorded while it lasted.
 */
export function EpisodeDetail({ id, onClose }: { id: string; onClose: () => void }) {
  const q = useQuery<EpisodeWithSamples, ApiError>({ queryKey: lockKeys.episode(id), queryFn: ({ signal }) => fetchEpisode(id, signal), refetchInterval: (query) => (query.state.data?.endedAt ? false : HISTORY_REFRESH_MS) });
  const [sampleIndex, setSampleIndex] = useState<number | null>(null);
  const e = q.data;
  if (q.isError) return <ErrorState title={`Episode ${id} could not be loaded`} error={q.error} onRetry={() => void q.refetch()} retrying={q.isFetching} />;
  if (!e) return <Skeleton lines={4} label="Loading the episode" />;
  const index = sampleIndex ?? e.sampleTrees.length - 1;
  const sample = e.sampleTrees[index];
  return (
    <div className={styles.panel} data-testid="episode-detail" data-episode-id={e.id}>
      <div className={styles.nodeHead}>
        <h3 style={{ margin: 0 }}>
          Episode {e.id}: pid {e.root.pid} kept {e.peakWaiters} waiting at most, for {formatDuration(e.durationMs)}
        </h3>
        <button type="button" className="btn btn-sm" onClick={onClose}>
          Close
        </button>
      </div>
      <p className={styles.hint}>
        {formatUtcTime(e.startedAt)} → {e.endedAt ? formatUtcTime(e.endedAt) : 'going on'} · {e.samples === 1 ? '1 sample' : `${e.samples} samples`} · peak at {formatUtcTime(e.peakAt)}
      </p>
      <h4>Root blocker</h4>
      <BackendSummary b={e.root} />
      <h4>Tree {sample ? `at ${formatUtcTime(sample.at)}` : ''}</h4>
      {e.sampleTrees.length > 1 && (
        <input type="range" min={0} max={e.sampleTrees.length - 1} value={index} onChange={(ev) => setSampleIndex(Number(ev.target.value))} aria-label="Sample of this episode" data-testid="episode-scrubber" />
      )}
      {sample && <HistoryTree tree={sample.tree} />}
      <EpisodeWaiters waiters={e.waiters} />
      <h4>Locks</h4>
      {/* What was waited for first: that is what the waiters needed; then what the root held. */}
      <p className={styles.hint}>
        {[...e.locks.filter((l) => !l.granted), ...e.locks.filter((l) => l.granted)]
          .map((l) => `${l.lockType} ${l.mode}${l.relation ? ` on ${l.relation}` : ''}${l.granted ? ' (held)' : ' (waited for)'}`)
          .join(' · ') || '—'}
      </p>
      <EpisodeLinks links={e.links} />
    </div>
  );
}

function EpisodeWaiters({ waiters }: { waiters: EpisodeWithSamples['waiters'] }) {
  return (
    <>
      <h4>Waiters seen ({waiters.length})</h4>
      <div className={styles.scroll}>
        <table className={styles.table}>
          <thead>
            <tr>
              <th>pid</th>
              <th>application</th>
              <th>acting for</th>
              <th>operation</th>
              <th>intents</th>
              <th>waited</th>
              <th>query</th>
            </tr>
          </thead>
          <tbody>
            {waiters.map((w) => (
              <tr key={`${w.pid}-${w.waitingSince}`} data-testid="episode-waiter" data-pid={w.pid}>
                <td className={styles.mono}>{w.pid}</td>
                <td>{w.applicationName ?? '—'}</td>
                <td>{w.actor ?? '—'}</td>
                <td>{w.operation ?? '—'}</td>
                <td>
                  <IntentLinks refs={w.intents.map((i) => ({ id: i, via: null }))} />
                </td>
                <td className="nowrap">{formatDuration(w.waitedMs)}+</td>
                <td className={styles.queryCell}>
                  <span className={styles.query} title={w.query ?? ''}>
                    {w.query ?? '—'}
                  </span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function EpisodeLinks({ links }: { links: EpisodeWithSamples['links'] }) {
  return (
    <>
      <h4>Inside this episode</h4>
      <ul className={styles.hint} data-testid="episode-links">
        {links.unblocks.map((u) => (
          <li key={`u${u.id}`}>
            {formatUtcTime(u.at)} {u.action === 'backend_terminate' ? 'terminate' : 'cancel'} of pid {u.pid} by {u.actor} ·{' '}
            <Link href={`/audit?action=${u.action}&from=${encodeURIComponent(u.at.slice(0, 16))}`}>audit</Link>
          </li>
        ))}
        {links.deadlocks.map((d) => (
          <li key={`d${d.id}`}>
            {formatUtcTime(d.at)} deadlock in {d.operation} · <Link href="/contention">Contention</Link>
          </li>
        ))}
        {links.lockTimeouts.map((l) => (
          <li key={`t${l.intentId}${l.minute}${l.operation}`}>
            {formatUtcTime(l.minute)} minute: {l.count} lock timeout{l.count === 1 ? '' : 's'} of {l.operation} on <IntentLinks refs={[{ id: l.intentId, via: null }]} />
          </li>
        ))}
        {!links.unblocks.length && !links.deadlocks.length && !links.lockTimeouts.length && <li>No lock timeout, deadlock or unblock recorded during it.</li>}
      </ul>
    </>
  );
}

function BackendSummary({ b }: { b: EpisodeBackend }) {
  return (
    <div className={styles.node} data-testid="episode-root" data-pid={b.pid}>
      <div className={styles.nodeHead}>
        <strong className={styles.mono}>pid {b.pid}</strong>
        <span className={styles.nodeMeta}>
          {b.applicationName || '(no application name)'}
          {b.actor && <> · for console user {b.actor}</>} · {b.user ?? '?'}
          {b.clientAddr && <> @ {b.clientAddr}</>} · {b.state ?? '—'}
          {b.xactStart && <> · transaction from {formatUtcTime(b.xactStart)}</>}
        </span>
        <IntentLinks refs={b.intents.map((id) => ({ id, via: null }))} empty="no intent known" />
      </div>
      {b.query && (
        <span className={`${styles.query} ${styles.nodeQuery}`} title={b.query}>
          {b.query}
        </span>
      )}
    </div>
  );
}

/** A sampled blocking tree, drawn like the live one (without actions: this is the past). */
export function HistoryTree({ tree }: { tree: EpisodeTree }) {
  const byPid = new Map(tree.backends.map((b) => [b.pid, b]));
  const node = (n: BlockingNode, depth: number) => {
    const b = byPid.get(n.pid);
    return (
      <li key={n.pid} data-testid={`history-node-${n.pid}`}>
        <div className={`${styles.node} ${depth === 0 ? styles.nodeRoot : ''}`}>
          <div className={styles.nodeHead}>
            <strong className={styles.mono}>pid {n.pid}</strong>
            {depth === 0 ? <span className={`${styles.badge} ${styles.badgeRoot}`}>root blocker</span> : <span className={`${styles.badge} ${styles.badgeWait}`}>waiting</span>}
            {n.waitingBehind > 0 && <span className={styles.badge}>{n.waitingBehind} waiting behind</span>}
            {b && (
              <span className={styles.nodeMeta}>
                {b.applicationName || '(no application name)'} · {b.state ?? '—'}
              </span>
            )}
            {b && <IntentLinks refs={b.intents.map((id) => ({ id, via: null }))} empty="no intent known" />}
          </div>
          {b?.query && (
            <span className={`${styles.query} ${styles.nodeQuery}`} title={b.query}>
              {b.query}
            </span>
          )}
        </div>
        {n.children.length > 0 && <ul>{n.children.map((c) => node(c, depth + 1))}</ul>}
      </li>
    );
  };
  return <ul className={styles.tree}>{tree.tree.map((n) => node(n, 0))}</ul>;
}
