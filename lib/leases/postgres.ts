import { Prisma } from '@/generated/prisma/client';
import { db, type Db } from '@/lib/db/client';
import { announceCommitted } from '@/lib/live/announce';
import { tokenNumber } from './token';
import { SYSTEM_CALLER, type AcquireResult, type LeaseBackend, type LeaseCaller, type LiveLease, type NotDone, type RefreshResult, type ReleaseResult } from './types';

/**
 * Leases as rows in Postgres (the default): no state in this process, so any number of console instances share
 * them. Each operation is one statement (acquire is one call of bridge_lease_acquire, migration
 * 20261124110000_leases); expiry is judged by the database server's clock, never the caller's.
 *
 * A lease is bound to the credential that took it (`holder_credential`): only that credential refreshes or releases
 * it (or, for a release, a caller allowed to release any, whose name the event records as its actor).
 *
 * An operation that recorded an event which goes out to other services (acquired, denied, released, expired; not
 * refreshed) announces its commit afterwards, so the relays publish it at once instead of at their next poll.
 */
export class PostgresLeases implements LeaseBackend {
  readonly name = 'postgres' as const;

  constructor(private readonly client: () => Db = db) {}

  async acquire(resource: string, owner: string, ttlMs: number, caller: LeaseCaller = SYSTEM_CALLER): Promise<AcquireResult> {
    const rows = await this.client().$queryRaw<{ acquired: boolean; token: bigint | null; owner: string; expiresAt: Date }[]>`
      SELECT acquired, token, owner, expires_at AS "expiresAt"
      FROM bridge_lease_acquire(${resource}, ${owner}, ${ttlMs}::int, ${caller.credential}, ${caller.actor})`;
    const r = rows[0];
    announceCommitted(); // granted or denied, either way an event was recorded
    return r.acquired
      ? { acquired: true, token: tokenNumber(r.token!), expiresAt: r.expiresAt.toISOString() }
      : { acquired: false, owner: r.owner, expiresAt: r.expiresAt.toISOString() };
  }

  /**
   * Why a refresh or release found nothing to change: is the lease live under that owner and token at all (then
   * another credential took it)? Read after the refusal, so it only chooses the answer's wording and code.
   */
  private async notDone(resource: string, owner: string, token: number): Promise<NotDone> {
    const rows = await this.client().$queryRaw<unknown[]>`
      SELECT 1 FROM leases WHERE resource = ${resource} AND owner = ${owner} AND token = ${token}::bigint AND expires_at > clock_timestamp()`;
    return rows.length ? 'not_yours' : 'not_held';
  }

  async refresh(resource: string, owner: string, token: number, ttlMs: number, caller: LeaseCaller = SYSTEM_CALLER): Promise<RefreshResult> {
    const rows = await this.client().$queryRaw<{ expiresAt: Date }[]>`
      WITH refreshed AS (
        UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => ${ttlMs}::int / 1000.0)
        WHERE resource = ${resource} AND owner = ${owner} AND token = ${token}::bigint AND expires_at > clock_timestamp()
          AND holder_credential IS NOT DISTINCT FROM ${caller.credential}
        RETURNING resource, owner, token, expires_at
      ), event AS (
        INSERT INTO lease_events (resource, backend, event, owner, token, expires_at, actor)
        SELECT resource, 'postgres', 'refreshed', owner, token, expires_at, ${caller.actor} FROM refreshed
      )
      SELECT expires_at AS "expiresAt" FROM refreshed`;
    return rows[0] ? { refreshed: true, expiresAt: rows[0].expiresAt.toISOString() } : { refreshed: false, reason: await this.notDone(resource, owner, token) };
  }

  async release(resource: string, owner: string, token: number, caller: LeaseCaller = SYSTEM_CALLER): Promise<ReleaseResult> {
    const rows = await this.client().$queryRaw<unknown[]>`
      WITH released AS (
        UPDATE leases SET owner = NULL, expires_at = clock_timestamp(), holder_credential = NULL, holder_actor = NULL
        WHERE resource = ${resource} AND owner = ${owner} AND token = ${token}::bigint AND expires_at > clock_timestamp()
          AND (holder_credential IS NOT DISTINCT FROM ${caller.credential} OR ${caller.mayReleaseAny ?? false})
        RETURNING resource, token, expires_at
      ), event AS (
        INSERT INTO lease_events (resource, backend, event, owner, token, expires_at, actor)
        SELECT resource, 'postgres', 'released', ${owner}, token, expires_at, ${caller.actor} FROM released
      )
      SELECT 1 FROM released`;
    if (!rows.length) return { released: false, reason: await this.notDone(resource, owner, token) };
    announceCommitted();
    return { released: true };
  }

  async live(limit: number, resource?: string): Promise<LiveLease[]> {
    const rows = await this.client().$queryRaw<{ resource: string; owner: string; actor: string | null; token: bigint; acquiredAt: Date | null; expiresAt: Date }[]>`
      SELECT resource, owner, holder_actor AS actor, token, acquired_at AS "acquiredAt", expires_at AS "expiresAt"
      FROM leases WHERE owner IS NOT NULL AND expires_at > clock_timestamp()
        ${resource === undefined ? Prisma.empty : Prisma.sql`AND resource = ${resource}`}
      ORDER BY expires_at LIMIT ${limit}`;
    return rows.map((r) => ({
      resource: r.resource,
      owner: r.owner,
      actor: r.actor,
      token: tokenNumber(r.token),
      acquiredAt: r.acquiredAt?.toISOString() ?? null,
      expiresAt: r.expiresAt.toISOString(),
      backend: 'postgres',
    }));
  }

  /**
   * Clears leases whose time ran out and records `expired` for each. SKIP LOCKED: a row some acquire is working on
   * is left to that acquire, which records the expiry itself.
   */
  async sweep(): Promise<number> {
    const rows = await this.client().$queryRaw<unknown[]>`
      WITH gone AS (
        SELECT resource, owner, token, expires_at FROM leases
        WHERE owner IS NOT NULL AND expires_at <= clock_timestamp()
        ORDER BY expires_at LIMIT 1000
        FOR UPDATE SKIP LOCKED
      ), cleared AS (
        UPDATE leases l SET owner = NULL, holder_credential = NULL, holder_actor = NULL FROM gone WHERE l.resource = gone.resource
        RETURNING gone.resource, gone.owner, gone.token, gone.expires_at
      ), event AS (
        INSERT INTO lease_events (resource, backend, event, owner, token, expires_at, actor)
        SELECT resource, 'postgres', 'expired', owner, token, expires_at, 'system' FROM cleared
      )
      SELECT 1 FROM cleared`;
    if (rows.length) announceCommitted();
    return rows.length;
  }
}
