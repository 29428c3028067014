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

/** Why a refresh or release was refused: nobody holds the lease with that owner and token, or another caller does. */
export type NotDone = 'not_held' | 'not_yours';
export type RefreshResult = { refreshed: true; expiresAt: string } | { refreshed: false; reason: NotDone };
export type ReleaseResult = { released: true } | { released: false; reason: NotDone };

/**
 * Who calls: the credential a lease is bound to (`user:<id>` for a signed-in user, `token:<id>` for an API token,
 * or a name of the code's own, like `system`), and the user's name the event log records as the actor.
 * `mayReleaseAny`: an admin may release a lease someone else took (the event names the admin as its actor).
 */
export type LeaseCaller = { credential: string; actor: string; mayReleaseAny?: boolean };
/** Code that holds leases of its own (tests, the benchmark, tools): one credential for all of it. */
export const SYSTEM_CALLER: LeaseCaller = { credential: 'system', actor: 'system' };

/** A lease as the console lists it. `actor`: the user who took it (null for a lease taken before that was recorded). */
export type LiveLease = { resource: string; owner: string; actor: string | null; token: number | null; acquiredAt: string | null; expiresAt: string; backend: LeaseBackendName };

export type LeaseEventKind = 'acquired' | 'denied' | 'refreshed' | 'released' | 'expired';
export const LEASE_EVENT_KINDS: readonly LeaseEventKind[] = ['acquired', 'denied', 'refreshed', 'released', 'expired'];

export type LeaseEvent = {
  id: string;
  resource: string;
  backend: LeaseBackendName;
  event: LeaseEventKind;
  /** The name the lease is (or was asked to be) held under (for `denied`: who asked). */
  owner: string | null;
  /** The user who acted: who took, refreshed, released or asked; `system` when nobody did (expiry). */
  actor: string | null;
  /** For `denied`: who held the lease. */
  holder: string | null;
  /** Null for viewers, who see owners but not tokens. */
  token: number | null;
  expiresAt: string | null;
  at: string;
};

export interface LeaseBackend {
  readonly name: LeaseBackendName;
  /** The lease is bound to `caller`'s credential (SYSTEM_CALLER when not given). */
  acquire(resource: string, owner: string, ttlMs: number, caller?: LeaseCaller): Promise<AcquireResult>;
  /** Extends the lease by `ttlMs` from now, only for its holder (owner, token and the credential that took it) and only while it is live. */
  refresh(resource: string, owner: string, token: number, ttlMs: number, caller?: LeaseCaller): Promise<RefreshResult>;
  /** Ends the lease, only for its holder (owner, token and credential, or a caller that may release any) and only while it is live. */
  release(resource: string, owner: string, token: number, caller?: LeaseCaller): Promise<ReleaseResult>;
  /** Live leases, soonest expiry first, at most `limit`; only `resource`'s when one is named. */
  live(limit: number, resource?: string): Promise<LiveLease[]>;
  /** Records leases that ran out without anyone asking for them again; returns how many. */
  sweep(): Promise<number>;
}
