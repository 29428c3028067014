import { NextResponse } from 'next/server';
import { requireRequestActor } from '@/lib/auth/request';
import { handler, otherMethods } from '@/lib/http/respond';
import { NotFoundError } from '@/lib/shared/errors';
import { runWithComparison } from '@/lib/replay/runner';

export const dynamic = 'force-dynamic';

/**
 * GET /api/console/replay/runs/:id: one run with its live progress, results, and the comparison with the previous
 * finished run (regressions flagged). The Replay page polls it while the run is going. Needs `replay.read`.
 */
export const GET = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  await requireRequestActor(request, 'replay.read');
  const { id } = await params;
  const found = await runWithComparison(id);
  if (!found) throw new NotFoundError(`Replay run ${id}`, { id });
  return NextResponse.json(found, { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
