import type { PipelineRun } from '@/lib/pipeline/types';
import type { WorkersOverview } from '@/lib/workers/queries';

/** Browser-side reads for the Workers page and the intent page's pipeline panel (TanStack Query), with typed keys. */
export const workerKeys = {
  all: ['console', 'workers'] as const,
  overview: () => [...workerKeys.all, 'overview'] as const,
};

/** Under the intent's detail key, so the live feed's invalidation of an intent refreshes its runs too. */
export const pipelineRunsKey = (intentId: string) => ['intents', 'detail', intentId, 'pipeline'] as const;

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { accept: 'application/json' }, cache: 'no-store' });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
    throw new Error(res.status === 401 ? 'Your session has ended. Sign in again to continue.' : (body?.error?.message ?? `The server answered ${res.status} ${res.statusText}.`));
  }
  return (await res.json()) as T;
}

export const fetchWorkersOverview = () => getJson<WorkersOverview>('/api/workers');
export const fetchPipelineRuns = (intentId: string) => getJson<{ runs: PipelineRun[] }>(`/api/intents/${encodeURIComponent(intentId)}/pipeline`);
