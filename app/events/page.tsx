import { Forbidden } from '@/components/auth/Forbidden';
import { EventsView } from '@/components/events/EventsView';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Events · Bridge Console' };

export default async function EventsPage() {
  const me = await requirePageUser('/events');
  if (!can(me, 'intents.read')) return <Forbidden permission="intents.read" />;
  return <EventsView />;
}
