import { NextResponse } from 'next/server';
import { requireRequestActor } from '@/lib/auth/request';
import { handler, otherMethods } from '@/lib/http/respond';
import { queriesFor } from '@/lib/locks/mask';
import { takeLocksSnapshot } from '@/lib/locks/queries';

export const dynamic = 'force-dynamic';

/**
 * GET /api/locks[?limit=N]: active locks and waits (pg_locks × pg_stat_activity, top N plus a summary), the
 * blocking tree from pg_blocking_pids, and the intent each backend is about. 503 `db_under_pressure` with
 * Retry-After when the snapshot's own short timeouts fire. Needs `locks.read`; query text has its literals masked
 * unless the caller is on-call (lib/locks/mask.ts).
 */
export const GET = handler(async (request) => {
  const actor = await requireRequestActor(request, 'locks.read');
  const limit = new URL(request.url).searchParams.get('limit') ?? undefined;
  const snapshot = queriesFor(actor, await takeLocksSnapshot({ limit }));
  return NextResponse.json(snapshot, { headers: { 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
