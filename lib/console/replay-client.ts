import type { RunWithComparison } from '@/lib/replay/runner';
import type { RunSummary } from '@/lib/replay/summary';

/** Browser-side reads for the Replay page (TanStack Query), with typed keys. */
export const replayKeys = {
  all: ['console', 'replay'] as const,
  runs: () => [...replayKeys.all, 'runs'] as const,
  run: (id: string) => [...replayKeys.all, 'run', id] as const,
};

export class ReplayApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { accept: 'application/json' }, cache: 'no-store' });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
    if (res.status === 401) throw new ReplayApiError(401, 'unauthenticated', 'Your session has ended. Sign in again to continue.');
    throw new ReplayApiError(res.status, body?.error?.code ?? 'http_error', body?.error?.message ?? `The server answered ${res.status} ${res.statusText}.`);
  }
  return (await res.json()) as T;
}

export const fetchReplayRuns = () => getJson<{ runs: RunSummary[] }>('/api/console/replay/runs');
export const fetchReplayRun = (id: string) => getJson<RunWithComparison>(`/api/console/replay/runs/${encodeURIComponent(id)}`);
