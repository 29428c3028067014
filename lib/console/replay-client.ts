import { getJson } from './api-client';
import type { RunWithComparison } from '@/lib/replay/runner';
import type { RunSummary } from '@/lib/replay/summary';

/** Browser-side reads for the Replay page (TanStack Query), with typed keys. */
export const replayKeys = {
  all: ['console', 'replay'] as const,
  runs: () => [...replayKeys.all, 'runs'] as const,
  run: (id: string) => [...replayKeys.all, 'run', id] as const,
};

export const fetchReplayRuns = () => getJson<{ runs: RunSummary[] }>('/api/console/replay/runs');
export const fetchReplayRun = (id: string) => getJson<RunWithComparison>(`/api/console/replay/runs/${encodeURIComponent(id)}`);
