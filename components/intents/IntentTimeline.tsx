'use client';

import { useInfiniteQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useMemo, useState } from 'react';
import { ErrorState } from '@/components/ui/ErrorState';
import { Panel } from '@/components/ui/PageHeader';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { Skeleton } from '@/components/ui/Skeleton';
import { fetchIntentTimeline } from '@/lib/console/intents-client';
import { intentKeys } from '@/lib/intents/keys';
import { TIMELINE_KIND_LABELS, TIMELINE_KIND_NAMES, TIMELINE_KINDS, type TimelineEntry, type TimelineKind } from '@/lib/timeline/types';
import styles from './intents.module.css';

/**
 * Some of the timeline is not in the audit log the live feed follows (lease events, lock timeouts, idempotent
 * repeats, JetStream acknowledgements): while the page is visible it is read again this often as well.
 */
const REFRESH_MS = 5_000;
/**
 * While a blocking on the page is still going on, its end is looked for every second: the change it delayed commits
 * (and refreshes the timeline) a moment before the lock history's sampler records that it ended.
 */
const REFRESH_BLOCKING_MS = 1_000;
const blockingGoesOn = (pages: { items: TimelineEntry[] }[] | undefined) =>
  (pages ?? []).some((p) => p.items.some((e) => e.kind === 'lock_episode' && (e.details as { endedAt?: string | null }).endedAt === null));

/** Kinds that mean something went wrong or waited: drawn in the warning colour. */
const WARN: ReadonlySet<TimelineKind> = new Set(['conflict', 'lock_wait', 'lock_timeout', 'unblock']);

/**
 * Everything that happened to the intent, in one list, newest first: status changes, corrections, conflicts,
 * pipeline runs, leases and fenced writes, events sent out, lock waits and timeouts, unblocks (lib/timeline).
 * Filterable by kind; each entry links to where it lives. It sits under the intent's detail key, so the live feed
 * refreshes it with every change of the intent.
 */
export function IntentTimeline({ id }: { id: string }) {
  const timeline = useInfiniteQuery({
    queryKey: intentKeys.timeline(id),
    queryFn: ({ pageParam }) => fetchIntentTimeline(id, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: (q) => (blockingGoesOn(q.state.data?.pages) ? REFRESH_BLOCKING_MS : REFRESH_MS),
  });
  const [hidden, setHidden] = useState<ReadonlySet<TimelineKind>>(new Set());
  const entries = useMemo(() => (timeline.data?.pages.flatMap((p) => p.items) ?? []).reverse(), [timeline.data]);
  const counts = useMemo(() => {
    const c = new Map<TimelineKind, number>();
    for (const e of entries) c.set(e.kind, (c.get(e.kind) ?? 0) + 1);
    return c;
  }, [entries]);
  const shown = entries.filter((e) => !hidden.has(e.kind));
  const toggle = (kind: TimelineKind) =>
    setHidden((h) => {
      const next = new Set(h);
      if (next.has(kind)) next.delete(kind);
      else next.add(kind);
      return next;
    });
  const only = (kind: TimelineKind) => setHidden(new Set(TIMELINE_KINDS.filter((k) => k !== kind)));

  return (
    <Panel title={`Timeline${timeline.data ? ` (${entries.length}${timeline.hasNextPage ? '+' : ''})` : ''}`} id="timeline">
      {timeline.isPending ? (
        <Skeleton label="Loading the timeline" lines={6} />
      ) : timeline.isError ? (
        <ErrorState title="The timeline could not be loaded" error={timeline.error} onRetry={() => void timeline.refetch()} retrying={timeline.isFetching} />
      ) : (
        <>
          <div className={styles.timelineFilter} role="group" aria-label="Show kinds">
            {TIMELINE_KINDS.filter((k) => counts.has(k)).map((kind) => (
              <label key={kind} className={styles.timelineChip}>
                <input type="checkbox" checked={!hidden.has(kind)} onChange={() => toggle(kind)} data-testid={`timeline-filter-${kind}`} />
                {TIMELINE_KIND_LABELS[kind]} <span className="muted">{counts.get(kind)}</span>
              </label>
            ))}
            <select
              aria-label="Show only one kind"
              className={styles.timelineChip}
              value={TIMELINE_KINDS.find((k) => hidden.size === TIMELINE_KINDS.length - 1 && !hidden.has(k)) ?? ''}
              onChange={(e) => (e.target.value ? only(e.target.value as TimelineKind) : setHidden(new Set()))}
            >
              <option value="">Only…</option>
              {TIMELINE_KINDS.filter((k) => counts.has(k)).map((kind) => (
                <option key={kind} value={kind}>
                  {TIMELINE_KIND_LABELS[kind]}
                </option>
              ))}
            </select>
            {hidden.size > 0 && (
              <button type="button" className={styles.timelineChip} onClick={() => setHidden(new Set())}>
                Show all
              </button>
            )}
          </div>
          {shown.length === 0 ? (
            <p className="muted">Nothing of the kinds shown.</p>
          ) : (
            <ol className={`${styles.timeline} ${styles.timelineCompact}`} aria-label="Timeline, newest first">
              {shown.map((e) => (
                <TimelineItem key={`${e.kind}:${e.position}:${e.summary}`} entry={e} />
              ))}
            </ol>
          )}
          {timeline.hasNextPage && (
            <button type="button" onClick={() => void timeline.fetchNextPage()} disabled={timeline.isFetchingNextPage}>
              {timeline.isFetchingNextPage ? 'Loading…' : 'Load later entries'}
            </button>
          )}
        </>
      )}
    </Panel>
  );
}

function TimelineItem({ entry: e }: { entry: TimelineEntry }) {
  return (
    <li className={`${styles.timelineItem} ${WARN.has(e.kind) ? styles.timelineWarn : ''}`} data-testid="timeline-entry" data-kind={e.kind}>
      <div className={styles.timelineLine}>
        <span className={styles.timelineKind}>{TIMELINE_KIND_NAMES[e.kind]}</span>
        <span className={styles.timelineSummary}>{e.summary}</span>
      </div>
      <div className={styles.timelineMeta}>
        {e.actor ? `${e.actor} · ` : ''}
        <RelativeTime iso={e.at} /> ·{' '}
        <Link href={e.link} data-testid="timeline-link">
          open
        </Link>
      </div>
    </li>
  );
}
