import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { outboxStatus } from '@/lib/events/status';

export const dynamic = 'force-dynamic';

/** GET /api/console/events: the outbox relay's backlog, lag and relays, for the Events page. */
export const GET = handler(async (request) => {
  await requestActor(request, 'intents.read');
  return NextResponse.json(await outboxStatus(), { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
