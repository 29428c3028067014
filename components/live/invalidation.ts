import type { QueryClient, QueryKey } from '@tanstack/react-query';
import type { CountsAnswer } from '@/lib/counts/answer';
import { listAffected } from '@/lib/console/live-refresh';
import type { IntentList } from '@/lib/intents/queries';
import { intentKeys, UNFILTERED_COUNTS, type CountFilters, type IntentListFilters } from '@/lib/intents/keys';
import type { LiveMessage } from './LiveProvider';

/** The keys a batch of changes made stale, by query hash; `all` after a reset (everything about intents). */
export type Dirty = { all: boolean; keys: Map<string, QueryKey> };
export type Pause = { key: QueryKey; pending: number };

export const keyHasPrefix = (key: QueryKey, prefix: QueryKey) => prefix.every((part, i) => JSON.stringify(part) === JSON.stringify(key[i]));

/**
 * What a message makes stale: that intent's detail, the list pages the change can alter (lib/console/live-refresh.ts),
 * and the counts under a search. The unfiltered counts arrive with the message and are written straight to the cache.
 */
export function markDirty(queryClient: QueryClient, dirty: Dirty, message: LiveMessage): void {
  if (message.counts) queryClient.setQueryData<CountsAnswer>(intentKeys.count(UNFILTERED_COUNTS), message.counts);
  if (message.kind === 'reset') {
    dirty.all = true;
    return;
  }
  const d = dirty.keys;
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

/**
 * Invalidates what is dirty: refetched at once, except under a pause, where the keys are only marked stale and the
 * pause counts the batches waiting for it. Returns whether any pause's count changed.
 */
export function flushDirty(queryClient: QueryClient, dirty: Dirty, pauses: Iterable<Pause>): boolean {
  const targets = dirty.all ? [intentKeys.all] : [...dirty.keys.values()];
  const allPauses = [...pauses];
  let pausesChanged = false;
  for (const key of targets) {
    const paused = allPauses.filter((p) => keyHasPrefix(key, p.key) || keyHasPrefix(p.key, key));
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
  return pausesChanged;
}
