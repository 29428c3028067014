import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods } from '@/lib/http/respond';
import { resolveIntentId } from '@/lib/search/ids';
import { getIntent } from '@/lib/intents/queries';

export const dynamic = 'force-dynamic';

export const GET = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  await requestActor(request, 'intents.read');
  // A whole id, or a unique prefix of 8+ characters as the console shows it (lib/search/ids.ts).
  return NextResponse.json(await getIntent(await resolveIntentId((await params).id)));
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
