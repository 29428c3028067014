'use client';

import { useQueries, useQuery } from '@tanstack/react-query';
import { useState, type Dispatch, type SetStateAction } from 'react';
import type { Episode, EpisodePage } from '@/lib/locks/history/episodes';
import { coversMoment, layoutStrip, treeAt, waiterLevel } from '@/lib/locks/history/strip';
import { formatDuration } from '@/lib/locks/format';
import { plural } from '@/lib/shared/text';
import { formatUtcTime } from '@/components/ui/time';
import { ErrorState } from '@/components/ui/ErrorState';
import { Skeleton } from '@/components/ui/Skeleton';
import styles from './console.module.css';
import { EpisodeDetail, HISTORY_REFRESH_MS, HistoryTree } from './EpisodeDetail';
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
    refetchInterval: HISTORY_REFRESH_MS,
    placeholderData: (previous) => previous,
  });
  const data = list.data;
  const during = data && at !== null ? data.page.items.filter((e) => coversMoment(e, at)).slice(0, 4) : [];

  return (
    <section className={styles.section} data-testid="lock-history">
      <h2>History</h2>
      <p className={styles.sectionNote}>
        Blocking episodes kept by the sampler (about once a second while anything waits for a lock; a blocking shorter than that may be missed). Each bar is one blocking: a root
        blocker’s transaction while others waited behind it (its length how long they waited, its colour the most that did; a transaction that blocks again later is a second bar).
      </p>
      <HistoryFilters filters={filters} setFilters={setFilters} draft={draft} setDraft={setDraft} onWindow={() => setAt(null)} />

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
          <HistoryScrubber data={data} at={at} setAt={setAt} during={during} onOpen={setSelected} />
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

type Draft = { intentId: string; application: string };

/** The history's filters: the window, an intent, an application (prefix) and a minimum duration. */
function HistoryFilters({
  filters,
  setFilters,
  draft,
  setDraft,
  onWindow,
}: {
  filters: Filters;
  setFilters: Dispatch<SetStateAction<Filters>>;
  draft: Draft;
  setDraft: Dispatch<SetStateAction<Draft>>;
  onWindow: () => void;
}) {
  return (
    <form
      className={styles.toolbar}
      style={{ marginBottom: 10 }}
      onSubmit={(e) => {
        e.preventDefault();
        setFilters((f) => ({ ...f, intentId: draft.intentId, application: draft.application }));
      }}
    >
      <select className="field" aria-label="History window" value={filters.windowMs} onChange={(e) => (setFilters((f) => ({ ...f, windowMs: Number(e.target.value) })), onWindow())}>
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
  );
}

/** The scrubber over the window, and the blocking trees as the samples saw them at the chosen moment. */
function HistoryScrubber({ data, at, setAt, during, onOpen }: { data: Fetched; at: number | null; setAt: (at: number | null) => void; during: Episode[]; onOpen: (id: string) => void }) {
  const scrubbed = useQueries({
    queries: during.map((e) => ({ queryKey: lockKeys.episode(e.id), queryFn: ({ signal }: { signal: AbortSignal }) => fetchEpisode(e.id, signal), refetchInterval: e.endedAt ? false : HISTORY_REFRESH_MS })),
  });
  return (
    <>
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
                  <button type="button" className="btn btn-sm" onClick={() => onOpen(during[i].id)}>
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
    </>
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
    e.links.lockTimeouts.length && plural(e.links.lockTimeouts.reduce((n, l) => n + l.count, 0), 'lock timeout'),
    e.links.deadlocks.length && plural(e.links.deadlocks.length, 'deadlock'),
    e.links.unblocks.length && plural(e.links.unblocks.length, 'unblock'),
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : '—';
}
