import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readKeyedInput } from '@/lib/http/respond';
import { reevaluateIntent } from '@/lib/intents/commands';
import { replayHeaders } from '@/lib/intents/idempotency';
import { reevaluateInputSchema } from '@/lib/intents/schemas';

export const dynamic = 'force-dynamic';

export const POST = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  const actor = await requestActor(request, 'intents.correct');
  const result = await reevaluateIntent(await readKeyedInput(request, reevaluateInputSchema, { id: (await params).id }), actor);
  return NextResponse.json(result, { headers: replayHeaders(result) });
});

export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
