'use client';

import { useQueryClient, type QueryKey } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useSyncExternalStore, type ReactNode } from 'react';
import type { CountsAnswer } from '@/lib/counts/answer';
import { listAffected } from '@/lib/console/live-refresh';
import type { IntentList } from '@/lib/intents/queries';
import { intentKeys, UNFILTERED_COUNTS, type CountFilters, type IntentListFilters } from '@/lib/intents/keys';

/**
 * The browser end of the live feed (/api/events, see lib/live): one EventSource per tab, shared by every page.
 * Each change invalidates only the TanStack Query keys it touches, coalesced so a burst of commits refetches once:
 * that intent's detail, the list pages the change can alter (lib/console/live-refresh.ts), and the counts under a
 * search. The unfiltered status counts are not fetched at all: the server reads them once per batch for every open
 * page and they arrive with the events. Views can pause live refresh for their keys (`useLivePause`), e.g. while rows are
 * selected: the keys are only marked stale, and refetched when the pause ends.
 *
 * Positions: the last `id:` received is the position to resume from. The browser's own reconnect sends it as
 * `Last-Event-ID`; when the connection had to be recreated, it goes as `?since=`. A page can hand over the
 * position it read before loading its data (`<LiveSince>`), so nothing committed between the server render and the
 * stream opening is lost.
 */
export type LiveEvent = { id: string; intentId: string | null; action: string; toStatus: string | null };
export type LiveMessage = { kind: 'changes'; events: LiveEvent[]; counts?: CountsAnswer | null } | { kind: 'reset'; counts?: CountsAnswer | null };
export type LiveConnection = 'off' | 'connecting' | 'live' | 'reconnecting';
export type LiveState = { connection: LiveConnection; serverListening: boolean; lastEventAt: number | null };

type Pause = { key: QueryKey; pending: number };

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
const RECONNECT_BASE_MS = 500;
const RECONNECT_MAX_MS = 15_000;

const keyHasPrefix = (key: QueryKey, prefix: QueryKey) => prefix.every((part, i) => JSON.stringify(part) === JSON.stringify(key[i]));

export function LiveProvider({ enabled, children }: { enabled: boolean; children: ReactNode }) {
  const queryClient = useQueryClient();
  const stateRef = useRef<LiveState>({ connection: enabled ? 'connecting' : 'off', serverListening: true, lastEventAt: null });
  const stateListeners = useRef(new Set<() => void>());
  const messageListeners = useRef(new Set<(message: LiveMessage) => void>());
  const positionRef = useRef<string | null>(null);
  const pauses = useRef(new Map<string, Pause>());
  const dirty = useRef<{ all: boolean; keys: Map<string, QueryKey> }>({ all: false, keys: new Map() });
  const lastFlushAt = useRef(0);
  const flushTimer = useRef<ReturnType<typeof setTimeout> | null>(null);

  const setState = useCallback((patch: Partial<LiveState>) => {
    stateRef.current = { ...stateRef.current, ...patch };
    for (const fn of stateListeners.current) fn();
  }, []);

  const flush = useCallback(() => {
    flushTimer.current = null;
    lastFlushAt.current = Date.now();
    const { all, keys } = dirty.current;
    dirty.current = { all: false, keys: new Map() };
    const targets = all ? [intentKeys.all] : [...keys.values()];
    let pausesChanged = false;
    for (const key of targets) {
      const paused = [...pauses.current.values()].filter((p) => keyHasPrefix(key, p.key) || keyHasPrefix(p.key, key));
      if (paused.length === 0) {
        void queryClient.invalidateQueries({ queryKey: key });
        continue;
      }
      // Mark everything stale, refetch only what no pause covers.
      void queryClient.invalidateQueries({
        queryKey: key,
        refetchType: 'active',
        predicate: (q) => !paused.some((p) => keyHasPrefix(q.queryKey, p.key)),
      });
      void queryClient.invalidateQueries({ queryKey: key, refetchType: 'none' });
      for (const p of paused) p.pending++;
      pausesChanged = true;
    }
    if (pausesChanged) for (const fn of stateListeners.current) fn();
  }, [queryClient]);

  const schedule = useCallback(() => {
    if (flushTimer.current) return;
    const wait = Math.max(0, lastFlushAt.current + FLUSH_GAP_MS - Date.now());
    flushTimer.current = setTimeout(flush, wait);
  }, [flush]);

  const deliver = useCallback(
    (message: LiveMessage) => {
      const unfilteredKey = intentKeys.count(UNFILTERED_COUNTS);
      if (message.counts) queryClient.setQueryData(unfilteredKey, message.counts);
      if (message.kind === 'reset') dirty.current.all = true;
      else {
        const d = dirty.current.keys;
        const cache = queryClient.getQueryCache();
        for (const query of cache.findAll({ queryKey: intentKeys.lists() })) {
          const filters = query.queryKey[2] as IntentListFilters | undefined;
          if (!filters) continue;
          const data = query.state.data as IntentList | undefined;
          const shown = data ? new Set(data.items.map((i) => i.id)) : null;
          if (listAffected(filters, shown, message.events)) d.set(query.queryHash, query.queryKey);
        }
        for (const query of cache.findAll({ queryKey: intentKeys.counts() })) {
          const filters = query.queryKey[2] as CountFilters | undefined;
          const unfiltered = !filters || (!filters.q && !filters.source && !filters.from && !filters.to && !filters.contention);
          // Counts under a search cannot be told from the events: they are re-read (capped and bounded in time).
          if (!unfiltered || !message.counts) d.set(query.queryHash, query.queryKey);
        }
        for (const e of message.events) if (e.intentId) d.set(`detail:${e.intentId}`, intentKeys.detail(e.intentId));
      }
      setState({ lastEventAt: Date.now() });
      schedule();
      for (const fn of messageListeners.current) fn(message);
    },
    [queryClient, schedule, setState],
  );

  useEffect(() => {
    if (!enabled) {
      setState({ connection: 'off' });
      return;
    }
    let source: EventSource | null = null;
    let retryTimer: ReturnType<typeof setTimeout> | null = null;
    let attempt = 0;
    let everOpened = false;
    let disposed = false;

    const remember = (event: MessageEvent) => {
      if (event.lastEventId) positionRef.current = event.lastEventId;
    };
    const open = () => {
      const since = positionRef.current;
      source = new EventSource(since ? `/api/events?since=${encodeURIComponent(since)}` : '/api/events');
      setState({ connection: everOpened ? 'reconnecting' : 'connecting' });
      source.addEventListener('ready', (event) => {
        remember(event as MessageEvent);
        attempt = 0;
        everOpened = true;
        setState({ connection: 'live' });
      });
      source.addEventListener('changes', (event) => {
        const e = event as MessageEvent<string>;
        remember(e);
        const data = JSON.parse(e.data) as { events: LiveEvent[]; counts?: CountsAnswer | null };
        deliver({ kind: 'changes', events: data.events, counts: data.counts });
      });
      source.addEventListener('reset', (event) => {
        const e = event as MessageEvent<string>;
        remember(e);
        const data = (e.data ? JSON.parse(e.data) : {}) as { counts?: CountsAnswer | null };
        deliver({ kind: 'reset', counts: data.counts });
      });
      source.addEventListener('status', (event) => {
        const data = JSON.parse((event as MessageEvent<string>).data) as { listening: boolean };
        setState({ serverListening: data.listening });
      });
      source.onerror = () => {
        if (disposed || !source) return;
        if (source.readyState === EventSource.CONNECTING) {
          // The browser reconnects by itself, sending Last-Event-ID.
          setState({ connection: 'reconnecting' });
          return;
        }
        // Closed for good (e.g. the server answered with an error): start over from our last position.
        source.close();
        source = null;
        setState({ connection: 'reconnecting' });
        const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** attempt++) * (0.5 + Math.random() / 2);
        retryTimer = setTimeout(open, delay);
      };
    };
    open();
    return () => {
      disposed = true;
      if (retryTimer) clearTimeout(retryTimer);
      source?.close();
    };
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
        for (const fn of stateListeners.current) fn();
      },
      pendingFor: (id) => pauses.current.get(id)?.pending ?? 0,
    }),
    [queryClient],
  );

  return <LiveContext.Provider value={value}>{children}</LiveContext.Provider>;
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
