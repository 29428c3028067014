import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readInput } from '@/lib/http/respond';
import { acquireBodySchema } from '@/lib/leases/schemas';
import { acquireLease } from '@/lib/leases/service';

export const dynamic = 'force-dynamic';

/** POST /api/leases/:resource/acquire {owner, ttlMs}: 200 { acquired: true, token, expiresAt } or 409 `lease_denied` naming the holder; never waits. */
export const POST = handler(async (request, { params }: { params: Promise<{ resource: string }> }) => {
  const actor = await requestActor(request, 'leases.use');
  const body = await readInput(request, acquireBodySchema);
  return NextResponse.json(await acquireLease((await params).resource, body, actor));
});

export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
