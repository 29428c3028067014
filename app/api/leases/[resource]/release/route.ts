import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readInput } from '@/lib/http/respond';
import { releaseBodySchema } from '@/lib/leases/schemas';
import { releaseLease } from '@/lib/leases/service';

export const dynamic = 'force-dynamic';

/** POST /api/leases/:resource/release {owner, token}: 200 { released: true } or 409 `lease_not_held` for a stale token. */
export const POST = handler(async (request, { params }: { params: Promise<{ resource: string }> }) => {
  const actor = await requestActor(request, 'leases.use');
  const body = await readInput(request, releaseBodySchema);
  return NextResponse.json(await releaseLease((await params).resource, body, actor));
});

export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
