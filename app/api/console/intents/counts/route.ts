import { NextResponse } from 'next/server';
import { z } from 'zod';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { storable, STORABLE_MESSAGE } from '@/lib/http/strict';
import { parseInput } from '@/lib/intents/schemas';
import { countsUnder, rangeFiltersSchema } from '@/lib/search/intents';

export const dynamic = 'force-dynamic';

const countsQuery = z.strictObject({
  q: z.string().trim().max(200, { error: 'must be at most 200 characters' }).refine(storable, { error: STORABLE_MESSAGE }).optional(),
  ...rangeFiltersSchema.shape,
});

/**
 * Intents per status under a search, a source and a time range, for the Intents page's filter bar:
 * `{ counts, total, exact, capped, cap }` — exact without a search (maintained counts), capped under one.
 */
export const GET = handler(async (request) => {
  await requestActor(request, 'intents.read');
  const query = parseInput(countsQuery, Object.fromEntries(new URL(request.url).searchParams), 'query');
  return NextResponse.json(await countsUnder(query));
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
