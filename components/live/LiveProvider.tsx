'use client';

import { useQueryClient, type QueryClient, type QueryKey } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useSyncExternalStore, type ReactNode, type RefObject } from 'react';
import { readAfterLiveEvent } from '@/lib/console/api-client';
import type { CountsAnswer } from '@/lib/counts/answer';
import { openEventStream } from './event-stream';
import { flushDirty, markDirty, type Dirty, type Pause } from './invalidation';

/**
 * The browser end of the live feed (/api/events, see lib/live): one EventSource per tab, shared by every page.
 * Each change invalidates only the TanStack Query keys it touches, coalesced so a burst of commits refetches once:
 * that intent's detail, the list pages the change can alter (lib/console/live-refresh.ts), and the counts under a
 * search. The unfiltered status counts are not fetched at all: the server reads them once per batch for every open
 * page and they arrive with the events. Views can pause live refresh for their keys (`useLivePause`), e.g. while rows are
 * selected: the keys are only marked stale, and refetched when the pause ends.
 *
 * Each message carries the WAL position of the changes it names (`lsn`): it becomes the tab's read-after position
 * (lib/console/api-client.ts) before any refetch it causes, so the refetch is not answered by a read replica that has
 * not replayed those changes yet.
 *
 * Positions: the last `id:` received is the position to resume from. The browser's own reconnect sends it as
 * `Last-Event-ID`; when the connection had to be recreated, it goes as `?since=`. A page can hand over the
 * position it read before loading its data (`<LiveSince>`), so nothing committed between the server render and the
 * stream opening is lost.
 */
export type LiveEvent = { id: string; intentId: string | null; action: string; toStatus: string | null; lsn?: string };
/** `lsn`: the WAL position at or past the commits of the changes a message stands for (lib/live/stream.ts). */
export type LiveMessage = { kind: 'changes'; events: LiveEvent[]; counts?: CountsAnswer | null; lsn?: string } | { kind: 'reset'; counts?: CountsAnswer | null; lsn?: string };
export type LiveConnection = 'off' | 'connecting' | 'live' | 'reconnecting';
export type LiveState = { connection: LiveConnection; serverListening: boolean; lastEventAt: number | null };

type LiveContextValue = {
  getState: () => LiveState;
  subscribeState: (fn: () => void) => () => void;
  subscribe: (fn: (message: LiveMessage) => void) => () => void;
  offerPosition: (position: string | null) => void;
  setPause: (id: string, key: QueryKey | null) => void;
  pendingFor: (id: string) => number;
};

const LiveContext = createContext<LiveContextValue | null>(null);

const FLUSH_GAP_MS = 250;

export function LiveProvider({ enabled, children }: { enabled: boolean; children: ReactNode }) {
  const queryClient = useQueryClient();
  const stateRef = useRef<LiveState>({ connection: enabled ? 'connecting' : 'off', serverListening: true, lastEventAt: null });
  const stateListeners = useRef(new Set<() => void>());
  const messageListeners = useRef(new Set<(message: LiveMessage) => void>());
  const positionRef = useRef<string | null>(null);
  const pauses = useRef(new Map<string, Pause>());

  const setState = useCallback(
    (patch: Partial<LiveState>) => {
      const was = stateRef.current.connection;
      stateRef.current = { ...stateRef.current, ...patch };
      // Back after the server was unreachable: what failed to load meanwhile is asked for again, so a page that showed
      // "could not be loaded" recovers by itself instead of waiting for a click (what loaded is refreshed by the
      // changes the stream catches up on).
      if (was === 'reconnecting' && patch.connection === 'live') void queryClient.refetchQueries({ predicate: (q) => q.state.status === 'error', type: 'active' });
      for (const fn of stateListeners.current) fn();
    },
    [queryClient],
  );
  const notify = useCallback(() => {
    for (const fn of stateListeners.current) fn();
  }, []);
  const schedule = useCoalescedFlush(queryClient, pauses, notify);

  const deliver = useCallback(
    (message: LiveMessage) => {
      // Before anything refetches: the reads this message causes must see the changes it names.
      readAfterLiveEvent(message.lsn);
      schedule.mark(message);
      setState({ lastEventAt: Date.now() });
      schedule.flushSoon();
      for (const fn of messageListeners.current) fn(message);
    },
    [schedule, setState],
  );

  useEffect(() => {
    if (!enabled) {
      setState({ connection: 'off' });
      return;
    }
    return openEventStream({ position: positionRef, deliver, setState });
  }, [enabled, deliver, setState]);

  const value = useMemo<LiveContextValue>(
    () => ({
      getState: () => stateRef.current,
      subscribeState: (fn) => {
        stateListeners.current.add(fn);
        return () => stateListeners.current.delete(fn);
      },
      subscribe: (fn) => {
        messageListeners.current.add(fn);
        return () => messageListeners.current.delete(fn);
      },
      offerPosition: (position) => {
        if (position && !positionRef.current) positionRef.current = position;
      },
      setPause: (id, key) => {
        const existing = pauses.current.get(id);
        if (key) {
          if (!existing) pauses.current.set(id, { key, pending: 0 });
        } else if (existing) {
          pauses.current.delete(id);
          if (existing.pending > 0) void queryClient.invalidateQueries({ queryKey: existing.key });
        }
        notify();
      },
      pendingFor: (id) => pauses.current.get(id)?.pending ?? 0,
    }),
    [queryClient, notify],
  );

  return <LiveContext.Provider value={value}>{children}</LiveContext.Provider>;
}

/**
 * Changes are coalesced: each message marks what it makes stale (`mark`), and the invalidation runs at most once per
 * FLUSH_GAP_MS (`flushSoon`), so a burst of commits refetches once.
 */
function useCoalescedFlush(queryClient: QueryClient, pauses: RefObject<Map<string, Pause>>, onPausesChanged: () => void) {
  const dirty = useRef<Dirty>({ all: false, keys: new Map() });
  const lastFlushAt = useRef(0);
  const flushTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  return useMemo(() => {
    const flush = () => {
      flushTimer.current = null;
      lastFlushAt.current = Date.now();
      const batch = dirty.current;
      dirty.current = { all: false, keys: new Map() };
      if (flushDirty(queryClient, batch, pauses.current.values())) onPausesChanged();
    };
    return {
      mark: (message: LiveMessage) => markDirty(queryClient, dirty.current, message),
      flushSoon: () => {
        if (flushTimer.current) return;
        const wait = Math.max(0, lastFlushAt.current + FLUSH_GAP_MS - Date.now());
        flushTimer.current = setTimeout(flush, wait);
      },
    };
  }, [queryClient, pauses, onPausesChanged]);
}

function useLiveContext(): LiveContextValue {
  const ctx = useContext(LiveContext);
  if (!ctx) throw new Error('useLive… hooks need <LiveProvider> (app/providers.tsx)');
  return ctx;
}

const SERVER_STATE: LiveState = { connection: 'connecting', serverListening: true, lastEventAt: null };

/** The connection as the live indicator shows it. */
export function useLiveState(): LiveState {
  const ctx = useLiveContext();
  return useSyncExternalStore(ctx.subscribeState, ctx.getState, () => SERVER_STATE);
}

/** Runs `handler` for every change batch (other pages invalidate their own keys with it). */
export function useLiveEvents(handler: (message: LiveMessage) => void): void {
  const ctx = useLiveContext();
  const ref = useRef(handler);
  useEffect(() => {
    ref.current = handler;
  });
  useEffect(() => ctx.subscribe((m) => ref.current(m)), [ctx]);
}

/**
 * While `paused`, live changes only mark the queries under `key` stale (no refetch, so a selection never jumps);
 * returns how many change batches are waiting. Unpausing refetches them.
 */
export function useLivePause(id: string, key: QueryKey, paused: boolean): number {
  const ctx = useLiveContext();
  const keyText = JSON.stringify(key);
  useEffect(() => {
    if (!paused) return;
    ctx.setPause(id, JSON.parse(keyText) as QueryKey);
    return () => ctx.setPause(id, null);
  }, [ctx, id, keyText, paused]);
  const getPending = useCallback(() => ctx.pendingFor(id), [ctx, id]);
  return useSyncExternalStore(ctx.subscribeState, getPending, () => 0);
}

/** Hands the stream the position a server-rendered page read before loading its data (first connection only). */
export function LiveSince({ position }: { position: string | null }) {
  const ctx = useLiveContext();
  // Runs before the provider's effect (children first), so the very first EventSource already resumes from here.
  useEffect(() => ctx.offerPosition(position), [ctx, position]);
  return null;
}
