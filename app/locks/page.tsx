import { Forbidden } from '@/components/auth/Forbidden';
import { LocksView } from '@/components/locks/LocksView';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Locks · Bridge Console' };

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

export default async function LocksPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const me = await requirePageUser('/locks');
  if (!can(me, 'locks.read')) return <Forbidden permission="locks.read" />;
  // Links into the page: a lock refusal names its holder (?pid=), the intent page its episodes (?episode=, ?intent=).
  const params = await searchParams;
  const pid = one(params.pid);
  const episode = one(params.episode);
  const intent = one(params.intent);
  return (
    <LocksView
      canCancel={can(me, 'locks.cancel')}
      canTerminate={can(me, 'locks.terminate')}
      initialPid={pid && /^[1-9][0-9]{0,9}$/.test(pid) ? Number(pid) : null}
      initialEpisodeId={episode && /^[1-9][0-9]{0,17}$/.test(episode) ? episode : null}
      // The whole id or the first 8 or more characters the console shows, as the history's own filter takes it.
      initialIntentId={intent && /^[0-9a-f][0-9a-f-]{7,35}$/i.test(intent) ? intent : ''}
    />
  );
}
