import type { IntentList } from '@/lib/intents/queries';
import { FILTER_PARAMS, type CountFilters, type IntentListFilters } from '@/lib/intents/keys';
import type { CountsAnswer } from '@/lib/counts/answer';
import type { ConflictEvent, IntentWithCorrections } from '@/lib/shared/intent-types';
import type { TimelinePage } from '@/lib/timeline/types';

/** Browser-side reads for TanStack Query: the JSON API (and /api/console for what only the console needs). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

/** Retry once after a failure, but not after a refusal (4xx: a search too short or too slow stays so). */
export function retryUnlessRefused(failures: number, error: unknown): boolean {
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) return false;
  return failures < 1;
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { accept: 'application/json' }, cache: 'no-store' });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string; details?: unknown } } | null;
    const e = body?.error;
    if (res.status === 401) throw new ApiError(401, 'unauthenticated', 'Your session has ended. Sign in again to continue.');
    throw new ApiError(res.status, e?.code ?? 'http_error', e?.message ?? `The server answered ${res.status} ${res.statusText}.`, e?.details);
  }
  return (await res.json()) as T;
}

function filterParams(filters: CountFilters, params = new URLSearchParams()): URLSearchParams {
  for (const k of FILTER_PARAMS) {
    const v = filters[k];
    if (v) params.set(k, v);
  }
  return params;
}

export function fetchIntentList(filters: IntentListFilters): Promise<IntentList> {
  const params = new URLSearchParams({ limit: String(filters.limit) });
  if (filters.status) params.set('status', filters.status);
  filterParams(filters, params);
  if (filters.order) params.set('order', filters.order);
  if (filters.cursor) params.set('cursor', filters.cursor);
  return getJson(`/api/intents?${params}`);
}

export function fetchStatusCounts(filters: CountFilters): Promise<CountsAnswer> {
  const qs = filterParams(filters).toString();
  return getJson(`/api/console/intents/counts${qs ? `?${qs}` : ''}`);
}

export function fetchIntent(id: string): Promise<IntentWithCorrections> {
  return getJson(`/api/intents/${encodeURIComponent(id)}`);
}

export function fetchIntentTimeline(id: string, cursor?: string): Promise<TimelinePage> {
  return getJson(`/api/intents/${encodeURIComponent(id)}/timeline${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`);
}

export function fetchIntentConflicts(id: string): Promise<ConflictEvent[]> {
  return getJson(`/api/console/intents/${encodeURIComponent(id)}/conflicts`);
}
