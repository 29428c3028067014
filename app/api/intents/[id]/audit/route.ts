import { NextResponse } from 'next/server';
import { handler } from '@/lib/http/respond';
import { getIntentAudit } from '@/lib/intents/queries';

export const dynamic = 'force-dynamic';

export const GET = handler(async (_request, { params }: { params: Promise<{ id: string }> }) => {
  return NextResponse.json(await getIntentAudit((await params).id));
});
