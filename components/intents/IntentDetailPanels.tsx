import { dehydrate, HydrationBoundary, QueryClient } from '@tanstack/react-query';
import { intentKeys } from '@/lib/intents/keys';
import { getIntentConflicts } from '@/lib/intents/queries';
import { getIntentTimeline } from '@/lib/timeline/timeline';
import { ConflictsPanel } from './IntentHistoryPanels';
import { IntentTimeline } from './IntentTimeline';

/** Server panels of the intent page, each prefetching its own query so it streams in on its own. */
export async function TimelineServerPanel({ id }: { id: string }) {
  const queryClient = new QueryClient();
  await queryClient.prefetchInfiniteQuery({ queryKey: intentKeys.timeline(id), queryFn: () => getIntentTimeline(id), initialPageParam: undefined as string | undefined });
  return (
    <HydrationBoundary state={dehydrate(queryClient)}>
      <IntentTimeline id={id} />
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
