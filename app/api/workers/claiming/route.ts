import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readInput } from '@/lib/http/respond';
import { setClaimingPaused, workersPausedSchema } from '@/lib/workers/control';

export const dynamic = 'force-dynamic';

/**
 * POST /api/workers/claiming `{ paused }`: pauses or resumes claiming for every worker, as the Workers page's Pause
 * does (audited). While paused, new intents wait in RECEIVED, so a person can move one by hand; runs already in
 * flight finish. Needs `pipeline.run`.
 */
export const POST = handler(async (request) => {
  const actor = await requestActor(request, 'pipeline.run');
  const { paused } = await readInput(request, workersPausedSchema);
  return NextResponse.json(await setClaimingPaused(paused, actor), { headers: { 'Cache-Control': 'no-store' } });
});

export const { GET, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
