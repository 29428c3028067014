import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { getWorkersOverview } from '@/lib/workers/queries';

export const dynamic = 'force-dynamic';

/** The workers registry and the queue: `{ workers, queue: { ready, scheduled, running, failed, … }, … }`. */
export const GET = handler(async (request) => {
  await requestActor(request, 'intents.read');
  return NextResponse.json(await getWorkersOverview(), { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
