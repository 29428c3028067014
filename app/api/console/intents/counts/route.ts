import { NextResponse } from 'next/server';
import { z } from 'zod';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { storable, STORABLE_MESSAGE } from '@/lib/http/strict';
import { countIntentsByStatus } from '@/lib/intents/queries';
import { parseInput } from '@/lib/intents/schemas';

export const dynamic = 'force-dynamic';

const countsQuery = z.strictObject({ q: z.string().trim().max(200, { error: 'must be at most 200 characters' }).refine(storable, { error: STORABLE_MESSAGE }).optional() });

/** Intents per status under a search, for the Intents page's filter bar. */
export const GET = handler(async (request) => {
  await requestActor(request, 'intents.read');
  const { q } = parseInput(countsQuery, Object.fromEntries(new URL(request.url).searchParams), 'query');
  return NextResponse.json(await countIntentsByStatus({ q }));
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
