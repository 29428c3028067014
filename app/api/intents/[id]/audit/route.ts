import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { getIntentAudit } from '@/lib/intents/queries';

export const dynamic = 'force-dynamic';

export const GET = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  await requestActor(request, 'intents.read');
  return NextResponse.json(await getIntentAudit((await params).id));
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
