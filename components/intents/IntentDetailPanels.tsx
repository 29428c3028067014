import { dehydrate, HydrationBoundary, QueryClient } from '@tanstack/react-query';
import { intentKeys } from '@/lib/intents/keys';
import { getIntentAudit, getIntentConflicts } from '@/lib/intents/queries';
import { AuditPanel, ConflictsPanel } from './IntentHistoryPanels';

/** Server panels of the intent page, each prefetching its own query so it streams in on its own. */
export async function AuditServerPanel({ id }: { id: string }) {
  const queryClient = new QueryClient();
  await queryClient.prefetchQuery({ queryKey: intentKeys.audit(id), queryFn: () => getIntentAudit(id) });
  return (
    <HydrationBoundary state={dehydrate(queryClient)}>
      <AuditPanel id={id} />
    </HydrationBoundary>
  );
}

export async function ConflictsServerPanel({ id }: { id: string }) {
  const queryClient = new QueryClient();
  await queryClient.prefetchQuery({ queryKey: intentKeys.conflicts(id), queryFn: () => getIntentConflicts(id) });
  return (
    <HydrationBoundary state={dehydrate(queryClient)}>
      <ConflictsPanel id={id} />
    </HydrationBoundary>
  );
}
