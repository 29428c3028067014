import { Forbidden } from '@/components/auth/Forbidden';
import { AuditLog } from '@/components/audit/AuditLog';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { auditHref, auditParams } from '@/lib/audit/url';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Audit · Bridge Console' };

export default async function AuditPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = auditParams(await searchParams);
  const me = await requirePageUser(auditHref(params));
  if (!can(me, 'audit.read')) return <Forbidden permission="audit.read" />;
  return <AuditLog params={params} />;
}
