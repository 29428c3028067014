import { Forbidden } from '@/components/auth/Forbidden';
import { LocksView } from '@/components/locks/LocksView';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Locks · Bridge Console' };

export default async function LocksPage() {
  const me = await requirePageUser('/locks');
  if (!can(me, 'locks.read')) return <Forbidden permission="locks.read" />;
  return <LocksView canCancel={can(me, 'locks.cancel')} canTerminate={can(me, 'locks.terminate')} />;
}
