import { NextResponse } from 'next/server';
import { requireRequestActor } from '@/lib/auth/request';
import { handler, otherMethods } from '@/lib/http/respond';
import { listEpisodes } from '@/lib/locks/history/episodes';
import { queriesFor } from '@/lib/locks/mask';

export const dynamic = 'force-dynamic';

/**
 * GET /api/locks/episodes?from=&to=&intentId=&application=&minDurationMs=&limit=&cursor=: blocking episodes the
 * lock history sampler kept, newest first, with the minutes a storm was summarised in. Needs `locks.read`; query
 * text has its literals masked unless the caller is on-call, as on the Locks page.
 */
export const GET = handler(async (request) => {
  const actor = await requireRequestActor(request, 'locks.read');
  const page = await listEpisodes(Object.fromEntries(new URL(request.url).searchParams));
  return NextResponse.json(queriesFor(actor, page), { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
