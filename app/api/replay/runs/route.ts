import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readJsonBody } from '@/lib/http/respond';
import { startReplayForUser } from '@/lib/replay/runner';
import { summarizeRun } from '@/lib/replay/summary';

export const dynamic = 'force-dynamic';

/**
 * POST /api/replay/runs: starts a contention replay (staging and development only), for a release engineer's
 * pipeline as much as for the page's button. 202 with the run; it goes on in the background, and
 * `GET /api/console/replay/runs/{id}` (its Location) reports progress, verdicts and the comparison. Needs `replay.run`.
 */
export const POST = handler(async (request) => {
  const actor = await requestActor(request, 'replay.run');
  const run = await startReplayForUser(actor, await readJsonBody(request), 'api');
  return NextResponse.json({ run: summarizeRun(run) }, { status: 202, headers: { Location: `/api/console/replay/runs/${run.id}`, 'Cache-Control': 'no-store' } });
});

export const { GET, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
