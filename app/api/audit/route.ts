import { NextResponse } from 'next/server';
import { listAudit } from '@/lib/audit/log';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';

export const dynamic = 'force-dynamic';

/**
 * GET /api/audit?actor=&action=&intent=&from=&to=&cursor=&limit=: the global audit log, newest first, one keyset
 * page at a time (`nextCursor` continues it). Every role may read it.
 */
export const GET = handler(async (request) => {
  await requestActor(request, 'audit.read');
  const params = Object.fromEntries(new URL(request.url).searchParams);
  return NextResponse.json(await listAudit(params), { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
