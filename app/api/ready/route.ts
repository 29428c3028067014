import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { NextResponse } from 'next/server';
import { db } from '@/lib/db/client';
import { otherMethods } from '@/lib/http/respond';
import { liveHub } from '@/lib/live/hub';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Check = { ok: boolean; detail: string };

/** Migrations this build ships that the database has not finished applying. */
async function pendingMigrations(): Promise<string[]> {
  const shipped = (await readdir(join(process.cwd(), 'prisma', 'migrations'), { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  const rows = await db().$queryRaw<{ name: string }[]>`
    SELECT migration_name AS name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`;
  const applied = new Set(rows.map((r) => r.name));
  return shipped.filter((name) => !applied.has(name)).sort();
}

/**
 * Readiness, for a load balancer deciding whether to send traffic here (liveness is /api/health): the database
 * answers, it has every migration this build expects (an instance of a newer release waits until the upgrade's
 * migrations are applied), and the live feed is listening. Open, like health; says which check failed.
 */
export async function GET() {
  const checks: Record<string, Check> = {};
  try {
    const pending = await pendingMigrations();
    checks.database = { ok: true, detail: 'up' };
    checks.migrations = pending.length
      ? { ok: false, detail: `${pending.length} migration(s) not applied yet: ${pending.join(', ')}` }
      : { ok: true, detail: 'all applied' };
  } catch {
    checks.database = { ok: false, detail: 'not reachable, or its schema is not this console’s' };
  }
  try {
    const hub = await liveHub();
    checks.live = hub.isListening() ? { ok: true, detail: 'listening' } : { ok: false, detail: 'not listening yet (reconnecting to the database)' };
  } catch {
    checks.live = { ok: false, detail: 'could not start' };
  }
  const ready = Object.values(checks).every((c) => c.ok);
  return NextResponse.json({ ready, checks }, { status: ready ? 200 : 503, headers: { 'Cache-Control': 'no-store' } });
}

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
