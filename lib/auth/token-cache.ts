import { hubSignals, liveHub } from '@/lib/live/hub';
import type { AuthActor } from './types';

/**
 * API tokens this process verified recently, so a busy API client does not cost a token lookup per request. Safe
 * because nothing can make a cached answer stale unnoticed:
 * - every change that ends or narrows a token (revoke, expiry, a user disabled, deleted or given other roles) fires
 *   a trigger that notifies every instance, whose live hub connection (lib/live/hub.ts) passes it here: the whole
 *   cache is dropped;
 * - the process that made the change drops its own cache at once too (forgetVerifiedTokens), before it answers;
 * - the cache is only used while the hub's connection is listening: when it is lost (notifications could be missed)
 *   the cache is dropped and every request looks the token up again until it is back;
 * - an entry lives at most MAX_AGE_MS anyway, and a token's expiry is checked on every request.
 */
const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;

type Entry = { actor: AuthActor; tokenId: string; expiresAt: number | null; lastUsedAt: number | null; cachedAt: number };

const state = globalThis as unknown as { bridgeTokenCache?: { entries: Map<string, Entry>; listening: boolean; subscribed: boolean; generation: number } };
const cache = (state.bridgeTokenCache ??= { entries: new Map(), listening: false, subscribed: false, generation: 0 });

function subscribe() {
  if (cache.subscribed) return;
  cache.subscribed = true;
  hubSignals.on('auth', forgetVerifiedTokens);
  hubSignals.on('listening', (up: boolean) => {
    cache.listening = up;
    forgetVerifiedTokens();
  });
  // The hub is the one LISTEN connection of this process; starting it is cheap and idempotent.
  void liveHub().then(
    (hub) => (cache.listening = hub.isListening()),
    () => undefined,
  );
}

/** Drops every cached verification: after any change to a token or a user, here or (by notification) anywhere. */
export function forgetVerifiedTokens(): void {
  cache.generation++;
  cache.entries.clear();
}

/**
 * Taken before a token is looked up: a lookup that a change overtook (it read the token before the change
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
