import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readKeyedInput } from '@/lib/http/respond';
import { createIntentSchema } from '@/lib/intents/schemas';
import { createIntent } from '@/lib/intents/commands';
import { replayHeaders } from '@/lib/intents/idempotency';
import { listIntents } from '@/lib/intents/queries';

export const dynamic = 'force-dynamic';

export const POST = handler(async (request) => {
  const actor = await requestActor(request, 'intents.create');
  const intent = await createIntent(await readKeyedInput(request, createIntentSchema), actor);
  return NextResponse.json(intent, { status: 201, headers: { Location: `/api/intents/${intent.id}`, ...replayHeaders(intent) } });
});

export const GET = handler(async (request) => {
  await requestActor(request, 'intents.read');
  const params = Object.fromEntries(new URL(request.url).searchParams);
  return NextResponse.json(await listIntents(params));
});

export const { PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST', 'GET');
