import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, readJsonBody } from '@/lib/http/respond';
import { bulkUpdateStatus } from '@/lib/intents/commands';

export const dynamic = 'force-dynamic';

export const POST = handler(async (request) => {
  const { intents } = await bulkUpdateStatus((await readJsonBody(request)) as never, await requestActor(request));
  return NextResponse.json({ intents });
});
