import { getJson } from './api-client';
import type { IntentList } from '@/lib/intents/queries';
import { FILTER_PARAMS, type CountFilters, type IntentListFilters } from '@/lib/intents/keys';
import type { CountsAnswer } from '@/lib/counts/answer';
import type { ConflictEvent, IntentWithCorrections } from '@/lib/shared/intent-types';
import type { TimelinePage } from '@/lib/timeline/types';

/** Browser-side reads of intents for TanStack Query (keys: lib/intents/keys.ts). */

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
