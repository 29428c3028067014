import { redirect } from 'next/navigation';
import { Suspense } from 'react';
import { IntentsLiveControls, IntentsWorkspace } from '@/components/intents/IntentsWorkspace';
import { IntentsListPanel, StatusCountsPanel, WaitingPanel } from '@/components/intents/IntentsPanels';
import { LiveSince } from '@/components/live/LiveProvider';
import { PageHeader } from '@/components/ui/PageHeader';
import { TableSkeleton, Skeleton } from '@/components/ui/Skeleton';
import styles from '@/components/intents/intents.module.css';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { ignoredIntentFilters, intentsHref, parseIntentFilters, type IgnoredFilter } from '@/lib/console/filters';
import { livePositionForPage } from '@/lib/console/live-position';
import { concurrencySettings } from '@/lib/env';
import { DomainError } from '@/lib/shared/errors';
import { resolveSearch, type ResolvedSearch } from '@/lib/search/intents';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Intents · Bridge Console' };

export default async function IntentsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const filters = parseIntentFilters(params);
  const ignored = ignoredIntentFilters(params, filters);
  const user = await requirePageUser(intentsHref(filters));
  // What the search means (an id, a source, payload text). One intent with that id: open it instead of a list of one.
  let resolved: { search: ResolvedSearch } | undefined;
  if (filters.q) {
    try {
      const search = await resolveSearch(filters.q);
      if (search.jumpTo && !filters.cursor) redirect(`/intents/${search.jumpTo}`);
      resolved = { search };
    } catch (err) {
      // A search the list refuses (too short) is explained by the list panel itself.
      if (!(err instanceof DomainError)) throw err;
    }
  }
  const since = await livePositionForPage();
  return (
    <IntentsWorkspace>
      {/* Past the filters and the search straight to the rows (then j / k and Enter). */}
      <a href="#intent-results" className={styles.skipToResults}>
        Skip to the results
      </a>
      <LiveSince position={since} />
      <PageHeader title="Intents" description="Every intent, newest change first (or oldest first, or only those stuck). Filters live in the URL: copy it to share this view." actions={<IntentsLiveControls />} />
      {ignored.length > 0 && <IgnoredFilters ignored={ignored} />}
      <Suspense fallback={<Skeleton label="Loading status counts" lines={1} height={40} />}>
        <StatusCountsPanel filters={filters} resolved={resolved} />
      </Suspense>
      <Suspense fallback={<Skeleton label="Loading the oldest waiting intent" lines={1} height={32} />}>
        <WaitingPanel filters={filters} />
      </Suspense>
      <Suspense key={JSON.stringify(filters)} fallback={<TableSkeleton label="Loading intents" />}>
        {/* A link read otherwise than it was written offers no bulk change: the list is wider than it asked for. */}
        <IntentsListPanel filters={filters} resolved={resolved} canBulk={can(user, 'intents.bulk') && ignored.length === 0} lockTimeoutMs={concurrencySettings().lockTimeoutMs} />
      </Suspense>
    </IntentsWorkspace>
  );
}

/** What of the link the list did not apply, and why: said on the page rather than showing more than was asked for. */
function IgnoredFilters({ ignored }: { ignored: IgnoredFilter[] }) {
  return (
    <div className={styles.alert} role="alert" data-testid="ignored-filters">
      <strong>Part of this link’s filter was not applied</strong>, so the list below shows more than the link asked for, and bulk changes are off until
      the filter is fixed:
      <ul>
        {ignored.map((i) => (
          <li key={i.field}>
            <code>
              {i.field}={i.value}
            </code>
            : {i.why}
          </li>
        ))}
      </ul>
      <a href={intentsHref({})}>Clear the filters</a>
    </div>
  );
}
