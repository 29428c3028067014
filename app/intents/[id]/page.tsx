import { dehydrate, HydrationBoundary, QueryClient } from '@tanstack/react-query';
import { notFound, redirect } from 'next/navigation';
import { Suspense } from 'react';
import { IntentDetail } from '@/components/intents/IntentDetail';
import { ConflictsServerPanel, TimelineServerPanel } from '@/components/intents/IntentDetailPanels';
import { LiveSince } from '@/components/live/LiveProvider';
import { Skeleton } from '@/components/ui/Skeleton';
import { PipelineRunsPanel } from '@/components/workers/PipelineRunsPanel';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { parseIntentFilters } from '@/lib/console/filters';
import { listNavigation } from '@/lib/console/list-nav';
import { livePositionForPage } from '@/lib/console/live-position';
import { concurrencySettings, env } from '@/lib/env';
import { NotFoundError } from '@/lib/shared/errors';
import { intentKeys } from '@/lib/intents/keys';
import { getIntent } from '@/lib/intents/queries';
import { intentIdSchema } from '@/lib/shared/fields';
import { looksLikeIdPrefix } from '@/lib/search/parse';
import { resolveSearch } from '@/lib/search/intents';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Intent · Bridge Console' };

export default async function IntentPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { id: raw } = await params;
  const listFilters = parseIntentFilters(await searchParams);
  const user = await requirePageUser(`/intents/${encodeURIComponent(raw)}`);
  const parsed = intentIdSchema.safeParse(raw);
  if (!parsed.success) {
    // A short id as the table shows it (`/intents/3f2a9c1b`): the intent when only one id starts so, the list of
    // them when several do.
    const prefix = raw.trim();
    if (!looksLikeIdPrefix(prefix)) notFound();
    const search = await resolveSearch(prefix, true);
    if (search.jumpTo) redirect(`/intents/${search.jumpTo}`);
    if (search.kind === 'idPrefix') redirect(`/intents?${new URLSearchParams({ q: prefix })}`);
    notFound();
  }
  const id = parsed.data;
  const since = await livePositionForPage();
  const queryClient = new QueryClient();
  // The intent itself is awaited here (one primary-key read) so a missing one answers 404, not an empty page.
  let nav;
  try {
    const intent = await queryClient.fetchQuery({ queryKey: intentKeys.detail(id), queryFn: () => getIntent(id) });
    // The list this intent was opened from (its filters ride in this page's URL): back to it, and its neighbours.
    nav = await listNavigation(intent, listFilters);
  } catch (err) {
    if (err instanceof NotFoundError) notFound();
    throw err;
  }
  return (
    <>
      <LiveSince position={since} />
      <HydrationBoundary state={dehydrate(queryClient)}>
        <IntentDetail
          id={id}
          permissions={{ status: can(user, 'intents.status'), correct: can(user, 'intents.correct') }}
          lockTimeoutMs={concurrencySettings().lockTimeoutMs}
          nav={nav}
          aside={
            <>
              <Suspense fallback={<Skeleton label="Loading the timeline" lines={6} />}>
                <TimelineServerPanel id={id} />
              </Suspense>
              <PipelineRunsPanel id={id} canRun={can(user, 'pipeline.run')} bridges={env().PIPELINE_BRIDGES} />
              <Suspense fallback={<Skeleton label="Loading conflict events" lines={2} />}>
                <ConflictsServerPanel id={id} />
              </Suspense>
            </>
          }
        />
      </HydrationBoundary>
    </>
  );
}
