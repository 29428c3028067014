import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, readJsonBody, otherMethods } from '@/lib/http/respond';
import { bulkUpdateStatus } from '@/lib/intents/commands';

export const dynamic = 'force-dynamic';

export const POST = handler(async (request) => {
  const actor = await requestActor(request, 'intents.bulk');
  const { intents } = await bulkUpdateStatus((await readJsonBody(request)) as never, actor);
  return NextResponse.json({ intents });
});

export const { GET, HEAD, PUT, PATCH, DELETE, OPTIONS } = otherMethods('POST');
