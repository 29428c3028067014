import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { rowLockHolders } from '@/lib/locks/holders';
import { queriesFor } from '@/lib/locks/mask';

export const dynamic = 'force-dynamic';

/**
 * GET /api/console/locks/holders?ids=a,b,…: which of these intents' rows are locked now, and by which backend, with
 * the holders' query text masked as the Locks page masks it (lib/locks/mask.ts).
 */
export const GET = handler(async (request) => {
  const actor = await requestActor(request, 'locks.read');
  const params = Object.fromEntries(new URL(request.url).searchParams);
  return NextResponse.json(queriesFor(actor, { holders: await rowLockHolders(params) }), { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
