import { NextResponse } from 'next/server';
import { db } from '@/lib/db/client';
import { otherMethods } from '@/lib/http/respond';

export const dynamic = 'force-dynamic';

/** Liveness and database reachability, for load balancers and the start script. Always open. */
export async function GET() {
  try {
    await db().$queryRaw`SELECT 1`;
    return NextResponse.json({ ok: true, db: 'up' });
  } catch (err) {
    console.error('[health] database check failed:', err);
    return NextResponse.json({ ok: false, db: 'down', error: { code: 'db_unavailable', message: 'The database is not reachable.' } }, { status: 503 });
  }
}

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
