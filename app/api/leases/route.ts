import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { listLeases } from '@/lib/leases/service';

export const dynamic = 'force-dynamic';

/** GET /api/leases[?limit=&resource=]: live leases (soonest expiry first) and the newest lease events. */
export const GET = handler(async (request) => {
  const actor = await requestActor(request, 'locks.read');
  const query = Object.fromEntries(new URL(request.url).searchParams);
  return NextResponse.json(await listLeases(query, actor), { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
