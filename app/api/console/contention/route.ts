import { NextResponse } from 'next/server';
import { requireRequestActor } from '@/lib/auth/request';
import { contentionReport } from '@/lib/contention/queries';
import { handler, otherMethods } from '@/lib/http/respond';

export const dynamic = 'force-dynamic';

/**
 * GET /api/console/contention?window=15m|1h|24h: chart-ready series for the Contention page (conflicts,
 * deadlocks, lock timeouts, retries, already-applied; per operation and transition; lock-wait percentiles;
 * Postgres' deadlock counter beside the application's; recent deadlocks). Needs `contention.read`.
 */
export const GET = handler(async (request) => {
  await requireRequestActor(request, 'contention.read');
  const window = new URL(request.url).searchParams.get('window') ?? undefined;
  return NextResponse.json(await contentionReport({ window }), { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
