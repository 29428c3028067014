import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readInput } from '@/lib/http/respond';
import { refreshBodySchema } from '@/lib/leases/schemas';
import { refreshLease } from '@/lib/leases/service';

export const dynamic = 'force-dynamic';

/** POST /api/leases/:resource/refresh {owner, token, ttlMs}: 200 { refreshed: true, token, expiresAt } or 409 `lease_not_held`. */
export const POST = handler(async (request, { params }: { params: Promise<{ resource: string }> }) => {
  const actor = await requestActor(request, 'leases.use');
  const body = await readInput(request, refreshBodySchema);
  return NextResponse.json(await refreshLease((await params).resource, body, actor));
});

export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
