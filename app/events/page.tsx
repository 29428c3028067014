import { Forbidden } from '@/components/auth/Forbidden';
import { EventsView } from '@/components/events/EventsView';
import { RecentEvents } from '@/components/events/RecentEvents';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { eventsHref, eventsParams } from '@/lib/console/events-url';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Events · Bridge Console' };

export default async function EventsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = eventsParams(await searchParams);
  const me = await requirePageUser(eventsHref(params));
  if (!can(me, 'intents.read')) return <Forbidden permission="intents.read" />;
  return (
    <EventsView>
      <RecentEvents params={params} />
    </EventsView>
  );
}
