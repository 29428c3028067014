import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { countIntentsQuerySchema } from '@/lib/intents/schemas';
import { parseInput } from '@/lib/shared/validation';
import { countsUnder } from '@/lib/search/intents';

export const dynamic = 'force-dynamic';

/**
 * Intents per status under a search, a source and a time range, for the Intents page's filter bar:
 * `{ counts, total, exact, capped, estimated, cap }` — exact without a search (maintained counts), capped under one.
 */
export const GET = handler(async (request) => {
  await requestActor(request, 'intents.read');
  const query = parseInput(countIntentsQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'query');
  return NextResponse.json(await countsUnder(query));
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
