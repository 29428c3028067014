import { announceCommitted } from '@/lib/live/announce';
import { db, type Db, type Tx } from '@/lib/db/client';
import { tokenNumber } from './token';
import type { LeaseBackendName, LeaseEvent, LeaseEventKind } from './types';

/**
 * The lease event log, in Postgres whichever backend holds the leases: what the Locks page shows, what the tests
 * check mutual exclusion against, and what the metrics count.
 */
export type NewLeaseEvent = {
  resource: string;
  event: LeaseEventKind;
  owner: string | null;
  holder?: string | null;
  /** The user who acted (`system` when nobody did). */
  actor: string;
  token: number | null;
  expiresAt: string | null;
  /** When it happened by the backend's clock (Redis' TIME); the database's clock when absent. */
  at?: string;
};

function eventsJson(events: NewLeaseEvent[]): string {
  return JSON.stringify(events.map((e) => ({ ...e, holder: e.holder ?? null, expires_at: e.expiresAt, at: e.at ?? null })));
}

export async function recordLeaseEvents(backend: LeaseBackendName, events: NewLeaseEvent[], client: Db = db()): Promise<void> {
  if (events.length === 0) return;
  await client.$executeRaw`
    INSERT INTO lease_events (resource, backend, event, owner, holder, token, expires_at, at, actor)
    SELECT e.resource, ${backend}, e.event, e.owner, e.holder, e.token, e.expires_at, coalesce(e.at, clock_timestamp()), e.actor
    FROM jsonb_to_recordset(${eventsJson(events)}::jsonb)
      AS e(resource text, event text, owner text, holder text, token bigint, expires_at timestamptz, at timestamptz, actor text)`;
  if (events.some((e) => e.event !== 'refreshed')) announceCommitted();
}

/**
 * A grant made outside Postgres (Redis): advances the resource's fence to its token (bridge_fence_grant) and records
 * its events, in one statement, so the Postgres fence check accepts writes with that token and nothing else. False
 * when the fence already holds that token or a higher one (then the events are not written).
 */
export async function recordGrant(backend: LeaseBackendName, resource: string, token: number, events: NewLeaseEvent[], client: Db = db()): Promise<boolean> {
  const rows = await client.$queryRaw<{ accepted: boolean }[]>`
    WITH fence AS MATERIALIZED (SELECT bridge_fence_grant(${resource}::text, ${token}::bigint) AS accepted),
    written AS (
      INSERT INTO lease_events (resource, backend, event, owner, holder, token, expires_at, at, actor)
      SELECT e.resource, ${backend}, e.event, e.owner, e.holder, e.token, e.expires_at, coalesce(e.at, clock_timestamp()), e.actor
      FROM jsonb_to_recordset(${eventsJson(events)}::jsonb)
        AS e(resource text, event text, owner text, holder text, token bigint, expires_at timestamptz, at timestamptz, actor text)
      WHERE (SELECT accepted FROM fence)
    )
    SELECT accepted FROM fence`;
  if (rows[0].accepted) announceCommitted();
  return rows[0].accepted;
}

type EventRow = Omit<LeaseEvent, 'id' | 'token' | 'expiresAt' | 'at'> & { id: bigint; token: bigint | null; expiresAt: Date | null; at: Date };

const toEvent = (r: EventRow): LeaseEvent => ({
  ...r,
  id: String(r.id),
  token: r.token === null ? null : tokenNumber(r.token),
  expiresAt: r.expiresAt?.toISOString() ?? null,
  at: r.at.toISOString(),
});

/** The newest events (of one resource, when given), newest first. */
export async function recentLeaseEvents(args: { limit: number; resource?: string }, client: Db = db()): Promise<LeaseEvent[]> {
  const rows = args.resource
    ? await client.$queryRaw<EventRow[]>`
        SELECT id, resource, backend, event, owner, holder, actor, token, expires_at AS "expiresAt", at
        FROM lease_events WHERE resource = ${args.resource} ORDER BY id DESC LIMIT ${args.limit}`
    : await client.$queryRaw<EventRow[]>`
        SELECT id, resource, backend, event, owner, holder, actor, token, expires_at AS "expiresAt", at
        FROM lease_events ORDER BY id DESC LIMIT ${args.limit}`;
  return rows.map(toEvent);
}

/** Every event of a resource, oldest first (tests replay the log to check mutual exclusion). */
export async function leaseHistory(resource: string, client: Db = db()): Promise<LeaseEvent[]> {
  const rows = await client.$queryRaw<EventRow[]>`
    SELECT id, resource, backend, event, owner, holder, actor, token, expires_at AS "expiresAt", at
    FROM lease_events WHERE resource = ${resource} ORDER BY id`;
  return rows.map(toEvent);
}

/** Totals per backend and event, for the metrics (kept as long as the events are). */
export async function leaseEventTotals(client: Tx = db()): Promise<{ backend: LeaseBackendName; event: LeaseEventKind; n: number }[]> {
  const rows = await client.$queryRaw<{ backend: LeaseBackendName; event: LeaseEventKind; n: bigint }[]>`
    SELECT backend, event, count(*) AS n FROM lease_events GROUP BY backend, event`;
  return rows.map((r) => ({ ...r, n: Number(r.n) }));
}
