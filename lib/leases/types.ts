/**
 * The lease contract both backends keep (lib/leases/postgres.ts, lib/leases/redis.ts). A lease is cooperative and
 * time-limited: `acquire` answers at once (never waits for the holder), the TTL is judged by the backend's clock,
 * and every grant carries a fencing token that only grows per resource, so a write protected by the lease can tell
 * a holder that lost it (paused past its TTL) from the current one.
 */
export type LeaseBackendName = 'postgres' | 'redis';

export type LeaseGranted = { acquired: true; token: number; expiresAt: string };
export type LeaseDenied = { acquired: false; owner: string; expiresAt: string };
export type AcquireResult = LeaseGranted | LeaseDenied;

export type RefreshResult = { refreshed: true; expiresAt: string } | { refreshed: false };

/** A lease as the console lists it. */
export type LiveLease = { resource: string; owner: string; token: number; acquiredAt: string | null; expiresAt: string; backend: LeaseBackendName };

export type LeaseEventKind = 'acquired' | 'denied' | 'refreshed' | 'released' | 'expired';
export const LEASE_EVENT_KINDS: readonly LeaseEventKind[] = ['acquired', 'denied', 'refreshed', 'released', 'expired'];

export type LeaseEvent = {
  id: string;
  resource: string;
  backend: LeaseBackendName;
  event: LeaseEventKind;
  /** Who acted (for `denied`: who asked). */
  owner: string | null;
  /** For `denied`: who held the lease. */
  holder: string | null;
  token: number | null;
  expiresAt: string | null;
  at: string;
};

export interface LeaseBackend {
  readonly name: LeaseBackendName;
  acquire(resource: string, owner: string, ttlMs: number): Promise<AcquireResult>;
  /** Extends the lease by `ttlMs` from now, only for its holder (owner and token) and only while it is live. */
  refresh(resource: string, owner: string, token: number, ttlMs: number): Promise<RefreshResult>;
  /** Ends the lease, only for its holder (owner and token) and only while it is live. */
  release(resource: string, owner: string, token: number): Promise<boolean>;
  /** Live leases, soonest expiry first, at most `limit`; only `resource`'s when one is named. */
  live(limit: number, resource?: string): Promise<LiveLease[]>;
  /** Records leases that ran out without anyone asking for them again; returns how many. */
  sweep(): Promise<number>;
}
