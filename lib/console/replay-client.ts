import { getJson } from './api-client';
import type { RunWithComparison } from '@/lib/replay/compare';
import type { RunSummary } from '@/lib/replay/summary';

/** Browser-side reads for the Replay page (TanStack Query), with typed keys. */
export const replayKeys = {
  all: ['console', 'replay'] as const,
  runs: () => [...replayKeys.all, 'runs'] as const,
  /** One run, compared with `against` (null: the default, the pinned baseline or the previous comparable run). */
  run: (id: string, against: string | null = null) => [...replayKeys.all, 'run', id, against ?? 'default'] as const,
};

export const fetchReplayRuns = () => getJson<{ runs: RunSummary[] }>('/api/console/replay/runs');
export const fetchReplayRun = (id: string, against: string | null = null) =>
  getJson<RunWithComparison>(`/api/console/replay/runs/${encodeURIComponent(id)}${against ? `?against=${encodeURIComponent(against)}` : ''}`);
