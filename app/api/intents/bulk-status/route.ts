import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readInput } from '@/lib/http/respond';
import { bulkStatusSchema } from '@/lib/intents/schemas';
import { bulkUpdateStatus } from '@/lib/intents/commands';

export const dynamic = 'force-dynamic';

export const POST = handler(async (request) => {
  const actor = await requestActor(request, 'intents.bulk');
  const { intents } = await bulkUpdateStatus(await readInput(request, bulkStatusSchema), actor);
  return NextResponse.json({ intents });
});

export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
