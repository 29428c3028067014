import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { countIntentsByStatus } from '@/lib/intents/queries';
import { countIntentsQuerySchema, parseInput } from '@/lib/intents/schemas';

export const dynamic = 'force-dynamic';

/** Intents per status under a search, for the Intents page's filter bar. */
export const GET = handler(async (request) => {
  await requestActor(request, 'intents.read');
  const { q } = parseInput(countIntentsQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'query');
  return NextResponse.json(await countIntentsByStatus({ q }));
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
