import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { rowLockHolders } from '@/lib/locks/holders';

export const dynamic = 'force-dynamic';

/** GET /api/console/locks/holders?ids=a,b,…: which of these intents' rows are locked now, and by which backend. */
export const GET = handler(async (request) => {
  await requestActor(request, 'locks.read');
  const params = Object.fromEntries(new URL(request.url).searchParams);
  return NextResponse.json({ holders: await rowLockHolders(params) }, { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
