import { NextResponse } from 'next/server';
import { requireRequestActor } from '@/lib/auth/request';
import { handler, otherMethods } from '@/lib/http/respond';
import { listRuns } from '@/lib/replay/runs';
import { summarizeRun } from '@/lib/replay/summary';

export const dynamic = 'force-dynamic';

/** GET /api/console/replay/runs: the latest replay runs (summaries), newest first, for the Replay page. Needs `replay.read`. */
export const GET = handler(async (request) => {
  await requireRequestActor(request, 'replay.read');
  const runs = await listRuns(30);
  return NextResponse.json({ runs: runs.map(summarizeRun) }, { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
