import { Forbidden } from '@/components/auth/Forbidden';
import { ContentionView } from '@/components/contention/ContentionView';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { isWindowKey } from '@/lib/contention/series';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Contention · Bridge Console' };

export default async function ContentionPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const window = isWindowKey(params.window) ? params.window : '1h';
  const me = await requirePageUser(`/contention?window=${window}`);
  if (!can(me, 'contention.read')) return <Forbidden permission="contention.read" />;
  return <ContentionView window={window} />;
}
