import { intentKeys } from '@/lib/intents/keys';
import { getJson } from './api-client';
import type { PipelineHistory } from '@/lib/pipeline/types';
import type { WorkersOverview } from '@/lib/workers/queries';

/** Browser-side reads for the Workers page and the intent page's pipeline panel (TanStack Query), with typed keys. */
export const workerKeys = {
  all: ['console', 'workers'] as const,
  overview: () => [...workerKeys.all, 'overview'] as const,
};

/** Under the intent's detail key, so the live feed's invalidation of an intent refreshes its runs too. */
export const pipelineKeys = {
  runs: (intentId: string) => [...intentKeys.detail(intentId), 'pipeline'] as const,
};

export const fetchWorkersOverview = () => getJson<WorkersOverview>('/api/workers');
export const fetchPipelineRuns = (intentId: string) => getJson<PipelineHistory>(`/api/intents/${encodeURIComponent(intentId)}/pipeline`);
