import type { WindowKey } from '@/lib/contention/series';

/** Browser-side keys and address of the Contention report (polled with a backoff by components/locks/live.tsx). */
export const contentionKeys = {
  all: ['console', 'contention'] as const,
  report: (window: WindowKey) => [...contentionKeys.all, window] as const,
};

export const contentionReportUrl = (window: WindowKey) => `/api/console/contention?window=${window}`;
