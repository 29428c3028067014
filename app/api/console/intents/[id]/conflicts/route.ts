import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { getIntentConflicts } from '@/lib/intents/queries';

export const dynamic = 'force-dynamic';

/** The version conflicts recorded for one intent (refused commands), oldest first. */
export const GET = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  await requestActor(request, 'intents.read');
  return NextResponse.json(await getIntentConflicts((await params).id));
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
