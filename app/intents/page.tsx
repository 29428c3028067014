import { Suspense } from 'react';
import { IntentsLiveControls, IntentsWorkspace } from '@/components/intents/IntentsWorkspace';
import { IntentsListPanel, StatusCountsPanel } from '@/components/intents/IntentsPanels';
import { LiveSince } from '@/components/live/LiveProvider';
import { PageHeader } from '@/components/ui/PageHeader';
import { TableSkeleton, Skeleton } from '@/components/ui/Skeleton';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { intentsHref, parseIntentFilters } from '@/lib/console/filters';
import { livePositionForPage } from '@/lib/console/live-position';
import { concurrencySettings } from '@/lib/env';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Intents · Bridge Console' };

export default async function IntentsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const filters = parseIntentFilters(await searchParams);
  const user = await requirePageUser(intentsHref(filters));
  const since = await livePositionForPage();
  return (
    <IntentsWorkspace>
      <LiveSince position={since} />
      <PageHeader title="Intents" description="Every intent, newest change first. Filters live in the URL: copy it to share this view." actions={<IntentsLiveControls />} />
      <Suspense fallback={<Skeleton label="Loading status counts" lines={1} height={40} />}>
        <StatusCountsPanel filters={filters} />
      </Suspense>
      <Suspense key={JSON.stringify(filters)} fallback={<TableSkeleton label="Loading intents" />}>
        <IntentsListPanel filters={filters} canBulk={can(user, 'intents.bulk')} lockTimeoutMs={concurrencySettings().lockTimeoutMs} />
      </Suspense>
    </IntentsWorkspace>
  );
}
