import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readKeyedInput } from '@/lib/http/respond';
import { updateIntentStatus } from '@/lib/intents/commands';
import { replayHeaders } from '@/lib/intents/idempotency';
import { updateStatusInputSchema } from '@/lib/intents/schemas';

export const dynamic = 'force-dynamic';

export const POST = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  const actor = await requestActor(request, 'intents.status');
  const result = await updateIntentStatus(await readKeyedInput(request, updateStatusInputSchema, { id: (await params).id }), actor);
  return NextResponse.json(result, { headers: replayHeaders(result) });
});

export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
