import type { IntentStatus } from '@/lib/shared/intent-states';

/** Keys of the bulk-by-filter dialog's queries (a preview count, then the batch's progress), read through server actions. */
export const bulkKeys = {
  all: ['console', 'bulk'] as const,
  preview: (filter: object, to: IntentStatus | '') => [...bulkKeys.all, 'preview', filter, to] as const,
  batch: (batchId: string | null) => [...bulkKeys.all, 'batch', batchId] as const,
};
