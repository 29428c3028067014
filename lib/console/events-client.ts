import type { OutboxStatus } from '@/lib/events/status';
import { getJson } from './api-client';

/** Browser-side reads for the Events page (TanStack Query), with typed keys. */
export const eventKeys = {
  all: ['console', 'events'] as const,
  status: () => [...eventKeys.all, 'status'] as const,
};

export const fetchOutboxStatus = () => getJson<OutboxStatus>('/api/console/events');
