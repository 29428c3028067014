'use client';

import Link from 'next/link';
import { useQueries, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { EpisodeBackend, EpisodeTree } from '@/lib/locks/history/fold';
import type { Episode, EpisodePage, EpisodeWithSamples } from '@/lib/locks/history/episodes';
import { coversMoment, layoutStrip, treeAt, waiterLevel } from '@/lib/locks/history/strip';
import { formatDuration } from '@/lib/locks/format';
import type { BlockingNode } from '@/lib/locks/types';
import { formatUtcTime } from '@/components/ui/time';
import { ErrorState } from '@/components/ui/ErrorState';
import { Skeleton } from '@/components/ui/Skeleton';
import styles from './console.module.css';
import { IntentLinks } from './IntentLinks';
import type { ApiError } from '@/lib/console/api-client';
import { fetchEpisode, fetchEpisodes, lockKeys } from '@/lib/console/locks-client';

/**
 * The Locks page's history: blocking episodes the sampler kept (GET /api/locks/episodes), as a time strip (length =
 * duration, colour = peak waiters), a scrubber that shows the blocking trees as they were at any moment of the
 * window, filters, and an episode's detail with its tree, intents and linked timeouts, deadlocks and unblocks.
 * Refreshes every few seconds, so an episode in progress grows on the strip.
 */

const WINDOWS = [
  { label: 'last 15 min', ms: 15 * 60_000 },
  { label: 'last hour', ms: 3_600_000 },
  { label: 'last 24 h', ms: 24 * 3_600_000 },
  { label: 'last 7 days', ms: 7 * 24 * 3_600_000 },
] as const;
const MIN_DURATIONS = [0, 1000, 5000, 30_000, 300_000];
const REFRESH_MS = 5000;
const LEVEL_CLASS = [styles.level0, styles.level1, styles.level2, styles.level3];

type Filters = { windowMs: number; intentId: string; application: string; minDurationMs: number };
type Fetched = { page: EpisodePage; from: number; to: number };

function listQuery(f: Filters, from: number, to: number): URLSearchParams {
  const q = new URLSearchParams({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), limit: '200' });
  if (f.intentId.trim()) q.set('intentId', f.intentId.trim());
  if (f.application.trim()) q.set('application', f.application.trim());
  if (f.minDurationMs) q.set('minDurationMs', String(f.minDurationMs));
  return q;
}

export function LockHistory({ initialIntentId = '', initialEpisodeId = null }: { initialIntentId?: string; initialEpisodeId?: string | null }) {
  const [filters, setFilters] = useState<Filters>({ windowMs: WINDOWS[1].ms, intentId: initialIntentId, application: '', minDurationMs: 0 });
  const [draft, setDraft] = useState({ intentId: initialIntentId, application: '' });
  const [selected, setSelected] = useState<string | null>(initialEpisodeId);
  /** The scrubbed moment (ms since the epoch: it stays put while the window slides on); null: not scrubbing. */
  const [at, setAt] = useState<number | null>(null);

  const list = useQuery<Fetched, ApiError>({
    queryKey: lockKeys.episodeList(filters),
    queryFn: async ({ signal }) => {
      const to = Date.now();
      const from = to - filters.windowMs;
      return { page: await fetchEpisodes(listQuery(filters, from, to), signal), from, to };
    },
    refetchInterval: REFRESH_MS,
    placeholderData: (previous) => previous,
  });
  const data = list.data;
  const during = data && at !== null ? data.page.items.filter((e) => coversMoment(e, at)).slice(0, 4) : [];
  const scrubbed = useQueries({
    queries: during.map((e) => ({ queryKey: lockKeys.episode(e.id), queryFn: ({ signal }: { signal: AbortSignal }) => fetchEpisode(e.id, signal), refetchInterval: e.endedAt ? false : REFRESH_MS })),
  });

  return (
    <section className={styles.section} data-testid="lock-history">
      <h2>History</h2>
      <p className={styles.sectionNote}>
        Blocking episodes kept by the sampler (about once a second while anything waits for a lock; a blocking shorter than that may be missed). Each bar is one root blocker’s
        transaction: its length the duration, its colour the most sessions that waited behind it.
      </p>
      <form
        className={styles.toolbar}
        style={{ marginBottom: 10 }}
        onSubmit={(e) => {
          e.preventDefault();
          setFilters((f) => ({ ...f, intentId: draft.intentId, application: draft.application }));
        }}
      >
        <select className="field" aria-label="History window" value={filters.windowMs} onChange={(e) => (setFilters((f) => ({ ...f, windowMs: Number(e.target.value) })), setAt(null))}>
          {WINDOWS.map((w) => (
            <option key={w.ms} value={w.ms}>
              {w.label}
            </option>
          ))}
        </select>
        <input className="field" aria-label="Intent id" placeholder="intent id" value={draft.intentId} onChange={(e) => setDraft((d) => ({ ...d, intentId: e.target.value }))} />
        <input className="field" aria-label="Application" placeholder="application (prefix)" value={draft.application} onChange={(e) => setDraft((d) => ({ ...d, application: e.target.value }))} />
        <label className={styles.hint}>
          at least{' '}
          <select className="field" aria-label="Minimum duration" value={filters.minDurationMs} onChange={(e) => setFilters((f) => ({ ...f, minDurationMs: Number(e.target.value) }))}>
            {MIN_DURATIONS.map((ms) => (
              <option key={ms} value={ms}>
                {ms ? formatDuration(ms) : 'any length'}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="btn btn-sm">
          Filter
        </button>
      </form>

      {!data && list.isPending && <Skeleton lines={3} label="Loading the lock history" />}
      {list.isError && <ErrorState title="The lock history could not be loaded" error={list.error} onRetry={() => void list.refetch()} retrying={list.isFetching} />}
      {data && (
        <>
          <TimeStrip
            fetched={data}
            selected={selected}
            at={at}
            onSelect={(e) => {
              // A bar opens its episode and shows the trees at its peak.
              setSelected(e.id);
              setAt(new Date(e.peakAt).getTime());
            }}
          />
          <label className={styles.scrubber}>
            <span className={styles.hint}>{at === null ? 'Scrub to any moment of the window' : `Trees at ${formatUtcTime(new Date(at).toISOString())}`}</span>
            <input
              type="range"
              min={0}
              max={1000}
              value={at === null ? 1000 : Math.min(1000, Math.max(0, Math.round(((at - data.from) / (data.to - data.from)) * 1000)))}
              aria-label="Moment to show"
              data-testid="history-scrubber"
              onChange={(e) => setAt(data.from + (Number(e.target.value) / 1000) * (data.to - data.from))}
            />
            {at !== null && (
              <button type="button" className="btn btn-sm" onClick={() => setAt(null)}>
                Stop scrubbing
              </button>
            )}
          </label>
          {at !== null && (
            <div data-testid="scrubbed-trees">
              {during.length === 0 && <div className={styles.empty}>Nobody was kept waiting at that moment (as far as the samples saw).</div>}
              {scrubbed.map((q, i) => {
                const sample = q.data ? treeAt(q.data.sampleTrees, at) : null;
                return (
                  <div key={during[i].id} className={styles.node}>
                    <div className={styles.nodeHead}>
                      <button type="button" className="btn btn-sm" onClick={() => setSelected(during[i].id)}>
                        Episode {during[i].id}
                      </button>
                      {sample && <span className={styles.hint}>tree as sampled at {formatUtcTime(sample.at)}</span>}
                    </div>
                    {sample ? <HistoryTree tree={sample.tree} /> : <Skeleton lines={2} label="Loading the tree" />}
                  </div>
                );
              })}
            </div>
          )}
          {data.page.storms.length > 0 && (
            <p className={styles.hint} data-testid="storm-note">
              Storms: {data.page.storms.map((s) => `${formatUtcTime(s.minute)} (${s.episodes} more root blockers, up to ${s.peakWaiters} waiting)`).join('; ')} — counted, not listed one by one.
            </p>
          )}
          <EpisodeList items={data.page.items} selected={selected} onSelect={setSelected} />
        </>
      )}
      {selected && <EpisodeDetail id={selected} onClose={() => setSelected(null)} />}
    </section>
  );
}

/** Where the strip's axis names the time: its ends and the quarters between. */
const STRIP_TICKS = [0, 0.25, 0.5, 0.75, 1];

function TimeStrip({ fetched, selected, onSelect, at }: { fetched: Fetched; selected: string | null; onSelect: (e: Episode) => void; at: number | null }) {
  const { bars, lanes } = layoutStrip(fetched.page.items, fetched.from, fetched.to);
  const byId = new Map(fetched.page.items.map((e) => [e.id, e]));
  const laneHeight = 14;
  const height = lanes * (laneHeight + 3) + 4;
  const span = fetched.to - fetched.from;
  return (
    <div className={styles.strip} data-testid="history-strip">
      <svg viewBox={`0 0 1000 ${height}`} preserveAspectRatio="none" width="100%" height={height} role="img" aria-label="Blocking episodes over time">
        {/* Faint lines at the axis' times, so a bar can be placed in time at a glance. */}
        {STRIP_TICKS.slice(1, -1).map((f) => (
          <line key={f} x1={f * 1000} x2={f * 1000} y1={0} y2={height} className={styles.gridline} />
        ))}
        {bars.map((b) => (
          <rect
            key={b.id}
            data-testid="strip-episode"
            data-episode-id={b.id}
            x={b.x * 1000}
            y={2 + b.lane * (laneHeight + 3)}
            width={b.width * 1000}
            height={laneHeight}
            rx={2}
            className={`${styles.bar} ${LEVEL_CLASS[waiterLevel(b.peakWaiters)]} ${selected === b.id ? styles.barSelected : ''}`}
            onClick={() => onSelect(byId.get(b.id)!)}
          >
            <title>{`Episode ${b.id}: up to ${b.peakWaiters} waiting`}</title>
          </rect>
        ))}
        {at !== null && at >= fetched.from && <line x1={((at - fetched.from) / span) * 1000} x2={((at - fetched.from) / span) * 1000} y1={0} y2={height} className={styles.cursor} />}
      </svg>
      <div className={styles.stripAxis}>
        {STRIP_TICKS.map((f) => (
          <span key={f}>{formatUtcTime(new Date(fetched.from + f * span).toISOString())}</span>
        ))}
      </div>
    </div>
  );
}

function EpisodeList({ items, selected, onSelect }: { items: Episode[]; selected: string | null; onSelect: (id: string) => void }) {
  if (!items.length) return <div className={styles.empty}>No blocking episode in this window.</div>;
  return (
    <div className={styles.scroll}>
      <table className={styles.table}>
        <thead>
          <tr>
            <th>started</th>
            <th>lasted</th>
            <th>root blocker</th>
            <th>waiters (peak)</th>
            <th>intents</th>
            <th>linked</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {items.map((e) => (
            <tr key={e.id} data-testid="episode-row" data-episode-id={e.id} className={selected === e.id ? styles.selectedRow : ''}>
              <td className="nowrap">{formatUtcTime(e.startedAt)}</td>
              <td className="nowrap">
                {formatDuration(e.durationMs)}
                {!e.endedAt && <span className={`${styles.badge} ${styles.badgeRoot}`}> going on</span>}
              </td>
              <td>
                <span className={styles.mono}>pid {e.root.pid}</span> <span className={styles.nodeMeta}>{e.root.applicationName || '(no application name)'} · {e.root.state ?? '—'}</span>
              </td>
              <td>
                {e.waiters.length} ({e.peakWaiters})
              </td>
              <td>
                <IntentLinks refs={[...new Set(e.intents.map((i) => i.id))].map((id) => ({ id, via: null }))} />
              </td>
              <td className={styles.hint}>{linkSummary(e)}</td>
              <td>
                <button type="button" className="btn btn-sm" onClick={() => onSelect(e.id)} aria-expanded={selected === e.id}>
                  Open
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function linkSummary(e: Episode): string {
  const parts = [
    e.links.lockTimeouts.length && `${e.links.lockTimeouts.reduce((n, l) => n + l.count, 0)} lock timeouts`,
    e.links.deadlocks.length && `${e.links.deadlocks.length} deadlocks`,
    e.links.unblocks.length && `${e.links.unblocks.length} unblocks`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : '—';
}

function EpisodeDetail({ id, onClose }: { id: string; onClose: () => void }) {
  const q = useQuery<EpisodeWithSamples, ApiError>({ queryKey: lockKeys.episode(id), queryFn: ({ signal }) => fetchEpisode(id, signal), refetchInterval: (query) => (query.state.data?.endedAt ? false : REFRESH_MS) });
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
      <h4>Waiters seen ({e.waiters.length})</h4>
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
            {e.waiters.map((w) => (
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
      <h4>Locks</h4>
      {/* What was waited for first: that is what the waiters needed; then what the root held. */}
      <p className={styles.hint}>
        {[...e.locks.filter((l) => !l.granted), ...e.locks.filter((l) => l.granted)]
          .map((l) => `${l.lockType} ${l.mode}${l.relation ? ` on ${l.relation}` : ''}${l.granted ? ' (held)' : ' (waited for)'}`)
          .join(' · ') || '—'}
      </p>
      <h4>Inside this episode</h4>
      <ul className={styles.hint} data-testid="episode-links">
        {e.links.unblocks.map((u) => (
          <li key={`u${u.id}`}>
            {formatUtcTime(u.at)} {u.action === 'backend_terminate' ? 'terminate' : 'cancel'} of pid {u.pid} by {u.actor} ·{' '}
            <Link href={`/audit?action=${u.action}&from=${encodeURIComponent(u.at.slice(0, 16))}`}>audit</Link>
          </li>
        ))}
        {e.links.deadlocks.map((d) => (
          <li key={`d${d.id}`}>
            {formatUtcTime(d.at)} deadlock in {d.operation} · <Link href="/contention">Contention</Link>
          </li>
        ))}
        {e.links.lockTimeouts.map((l) => (
          <li key={`t${l.intentId}${l.minute}${l.operation}`}>
            {formatUtcTime(l.minute)} minute: {l.count} lock timeout{l.count === 1 ? '' : 's'} of {l.operation} on <IntentLinks refs={[{ id: l.intentId, via: null }]} />
          </li>
        ))}
        {!e.links.unblocks.length && !e.links.deadlocks.length && !e.links.lockTimeouts.length && <li>No lock timeout, deadlock or unblock recorded during it.</li>}
      </ul>
    </div>
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
function HistoryTree({ tree }: { tree: EpisodeTree }) {
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
