import { hubSignals, liveHub } from '@/lib/live/hub';
import type { AuthActor } from './types';

/**
 * API tokens and sessions this process verified recently, so a busy API client or a signed-in page does not cost a
 * credential lookup per request. Safe because nothing can make a cached answer stale unnoticed:
 * - every change that ends or narrows a credential (a token revoked or expired; a session signed out, rotated,
 *   expired or shortened; a user disabled, deleted or given other roles) fires a trigger that notifies every
 *   instance, whose live hub connection (lib/live/hub.ts) passes it here: the whole cache is dropped;
 * - the process that made the change drops its own cache at once too (forgetVerifiedCredentials), before it answers;
 * - the cache is only used while the hub's connection is listening: when it is lost (notifications could be missed)
 *   the cache is dropped and every request looks the credential up again until it is back;
 * - an entry lives at most MAX_AGE_MS anyway, and a credential's expiry is checked on every request.
 */
const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;

type Entry = { actor: AuthActor; tokenId: string; expiresAt: number | null; lastUsedAt: number | null; cachedAt: number };

/** A verified session: its row's times (the sliding expiry moves on use) and its user as an actor. */
export type SessionEntry = {
  actor: AuthActor;
  userId: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  absoluteExpiresAt: Date;
  cachedAt: number;
};

type Cache = {
  entries: Map<string, Entry>;
  sessions: Map<string, SessionEntry>;
  listening: boolean;
  subscribed: boolean;
  generation: number;
  /** A start of the hub asked for by this cache and not yet answered. */
  starting?: Promise<void> | null;
};
const state = globalThis as unknown as { bridgeTokenCache?: Cache };
const cache: Cache = (state.bridgeTokenCache ??= { entries: new Map(), sessions: new Map(), listening: false, subscribed: false, generation: 0 });
// A process that kept its cache across a reload of this module (development) gains the sessions map here.
cache.sessions ??= new Map();

function subscribe() {
  if (!cache.subscribed) {
    cache.subscribed = true;
    hubSignals.on('auth', forgetVerifiedCredentials);
    hubSignals.on('listening', (up: boolean) => {
      cache.listening = up;
      forgetVerifiedCredentials();
    });
  }
  // The hub is the one LISTEN connection of this process; starting it is cheap and idempotent. Asked again while it
  // does not listen: a hub whose start failed (the database was unreachable) or that was stopped is started anew.
  if (cache.listening || cache.starting) return;
  cache.starting = liveHub()
    .then(
      (hub) => {
        if (hub.isListening()) cache.listening = true;
      },
      () => undefined,
    )
    .finally(() => (cache.starting = null));
}

/**
 * Drops every cached verification: after any change to a token, a session or a user, here or (by notification)
 * anywhere.
 */
export function forgetVerifiedCredentials(): void {
  cache.generation++;
  cache.entries.clear();
  cache.sessions.clear();
}

/**
 * Taken before a credential is looked up: a lookup that a change overtook (it read the row before the change
 * committed, the notification arrived meanwhile) must not be remembered.
 */
export function cacheGeneration(): number {
  return cache.generation;
}

/** A cached verification still good at `now`, or undefined (then look the token up). */
export function cachedToken(hash: string, now: Date): Entry | undefined {
  subscribe();
  if (!cache.listening) return undefined;
  const entry = cache.entries.get(hash);
  if (!entry) return undefined;
  if (now.getTime() - entry.cachedAt > MAX_AGE_MS || (entry.expiresAt !== null && entry.expiresAt <= now.getTime())) {
    cache.entries.delete(hash);
    return undefined;
  }
  return entry;
}

export function rememberToken(hash: string, entry: Omit<Entry, 'cachedAt'>, now: Date, generation: number): void {
  subscribe();
  if (!cache.listening || generation !== cache.generation) return;
  if (cache.entries.size >= MAX_ENTRIES) cache.entries.clear();
  cache.entries.set(hash, { ...entry, cachedAt: now.getTime() });
}

/** A cached session still good at `now`, or undefined (then look it up). */
export function cachedSession(id: string, now: Date): SessionEntry | undefined {
  subscribe();
  if (!cache.listening) return undefined;
  const entry = cache.sessions.get(id);
  if (!entry) return undefined;
  if (now.getTime() - entry.cachedAt > MAX_AGE_MS || now.getTime() < entry.cachedAt) {
    cache.sessions.delete(id);
    return undefined;
  }
  return entry;
}

export function rememberSession(id: string, entry: Omit<SessionEntry, 'cachedAt'>, now: Date, generation: number): void {
  subscribe();
  if (!cache.listening || generation !== cache.generation) return;
  if (cache.sessions.size >= MAX_ENTRIES) cache.sessions.clear();
  cache.sessions.set(id, { ...entry, cachedAt: now.getTime() });
}

export function forgetSession(id: string): void {
  cache.sessions.delete(id);
}
