import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { cancelReplayForUser } from '@/lib/replay/runner';

export const dynamic = 'force-dynamic';

/**
 * POST /api/replay/runs/:id/cancel: asks a running replay to stop (between steps; recorded as cancelled with what it
 * finished). 409 `replay_not_running` when it is not running. Needs `replay.run`.
 */
export const POST = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  const actor = await requestActor(request, 'replay.run');
  return NextResponse.json(await cancelReplayForUser(actor, (await params).id), { headers: { 'Cache-Control': 'no-store' } });
});

export const { GET, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
