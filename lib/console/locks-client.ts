import type { EpisodePage, EpisodeWithSamples } from '@/lib/locks/history/episodes';
import type { RowLockHolder as RowHolder } from '@/lib/locks/holders';
import { getJson } from './api-client';

/**
 * Browser-side reads for the Locks page (TanStack Query), with typed keys. Everything sits under `lockKeys.all`,
 * so an unblock invalidates the snapshot, the holders, the impact, the leases and the history at once.
 */
export const lockKeys = {
  all: ['console', 'locks'] as const,
  snapshot: (limit: number, allSessions: boolean) => [...lockKeys.all, 'snapshot', limit, allSessions] as const,
  holders: (ids: readonly string[]) => [...lockKeys.all, 'holders', ids] as const,
  impact: (pid: number) => [...lockKeys.all, 'impact', pid] as const,
  episodes: () => [...lockKeys.all, 'episodes'] as const,
  episodeList: (filters: object) => [...lockKeys.episodes(), 'list', filters] as const,
  episode: (id: string) => [...lockKeys.episodes(), 'detail', id] as const,
};

export const locksSnapshotUrl = (limit: number, allSessions: boolean) => `/api/locks?limit=${limit}${allSessions ? '&all=true' : ''}`;

/** Which of these intents' rows are locked right now, and by which backend (GET /api/console/locks/holders). */
export async function fetchRowHolders(ids: readonly string[]): Promise<RowHolder[]> {
  const answer = await getJson<{ holders: RowHolder[] }>(`/api/console/locks/holders?${new URLSearchParams({ ids: [...ids].sort().join(',') })}`);
  return answer.holders;
}

/** Blocking episodes the sampler kept in a window (GET /api/locks/episodes); `query` holds the filters. */
export const fetchEpisodes = (query: URLSearchParams, signal?: AbortSignal) => getJson<EpisodePage>(`/api/locks/episodes?${query}`, signal);

export const fetchEpisode = (id: string, signal?: AbortSignal) => getJson<EpisodeWithSamples>(`/api/locks/episodes/${encodeURIComponent(id)}`, signal);
