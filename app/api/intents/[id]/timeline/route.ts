import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { getIntentTimeline } from '@/lib/timeline/timeline';

export const dynamic = 'force-dynamic';

export const GET = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  await requestActor(request, 'intents.read');
  const query = Object.fromEntries(new URL(request.url).searchParams);
  return NextResponse.json(await getIntentTimeline((await params).id, query));
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
