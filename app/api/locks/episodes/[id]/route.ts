import { NextResponse } from 'next/server';
import { requireRequestActor } from '@/lib/auth/request';
import { handler, otherMethods } from '@/lib/http/respond';
import { NotFoundError } from '@/lib/shared/errors';
import { getEpisode } from '@/lib/locks/history/episodes';
import { queriesFor } from '@/lib/locks/mask';

export const dynamic = 'force-dynamic';

/**
 * GET /api/locks/episodes/:id: one blocking episode with the tree as it was at each sample that changed it. Needs
 * `locks.read`; query text masked for everyone but on-call.
 */
export const GET = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  const actor = await requireRequestActor(request, 'locks.read');
  const { id } = await params;
  const episode = await getEpisode({ id });
  if (!episode) throw new NotFoundError(`Lock episode ${id}`, { id });
  return NextResponse.json(queriesFor(actor, episode), { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
