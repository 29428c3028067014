import type { Tx } from '@/lib/db/client';
import { env } from '@/lib/env';
import { sha256Hex } from './secrets';

/**
 * Sign-in throttling from the `sign_in_attempts` table, so every console instance counts the same attempts. Callers
 * hold `lockSignInKeys` for the username (and address) in the same transaction as the check and the recording of
 * the attempt: concurrent guesses queue up and the counts are exact, not "roughly N".
 *
 * Throttling delays; it never locks anyone out, because a lockout is something a stranger can inflict on purpose
 * (`admin` is a well-known name). Within the window (SIGNIN_WINDOW_MINUTES):
 * - per username from one client address: SIGNIN_MAX_FAILURES failures since that address last signed in as that
 *   user are free; after that each further attempt must wait after the last failure 1 s, 2 s, 4 s … doubling up to
 *   SIGNIN_MAX_DELAY_SECONDS (30). A guesser gets about two tries a minute, and the right person, once the guessing
 *   stops, gets in within that delay, whoever typed the wrong passwords;
 * - per username from all addresses: the same progressive delay after SIGNIN_MAX_FAILURES_PER_USER failures
 *   (successes do not reset it), against guessing spread over many addresses;
 * - per client address, any username: a ceiling of SIGNIN_MAX_FAILURES_PER_IP failures in the window, against one
 *   address spraying many usernames. It applies only to a known address (TRUST_PROXY): without one every request
 *   would share the "unknown" address, and a ceiling on it would shut everyone out.
 *
 * An attempt refused for waiting is not recorded, so hammering does not extend the delay.
 */
export type SignInLimits = { maxFailures: number; maxFailuresPerUser: number; maxFailuresPerIp: number; windowMs: number; maxDelayMs?: number };

const BASE_DELAY_MS = 1_000;
const DEFAULT_MAX_DELAY_MS = 30_000;

export function signInLimits(): SignInLimits {
  const e = env();
  return {
    maxFailures: e.SIGNIN_MAX_FAILURES,
    maxFailuresPerUser: e.SIGNIN_MAX_FAILURES_PER_USER,
    maxFailuresPerIp: e.SIGNIN_MAX_FAILURES_PER_IP,
    windowMs: e.SIGNIN_WINDOW_MINUTES * 60_000,
    maxDelayMs: e.SIGNIN_MAX_DELAY_SECONDS * 1000,
  };
}

/** Advisory locks in a fixed order (address, then username), so two sign-ins never wait on each other in a cycle. */
export async function lockSignInKeys(tx: Tx, username: string, ip: string | null): Promise<void> {
  if (ip) await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`bridge:signin:ip:${ip}`}, 0))`;
  await lockSignInUsername(tx, username);
}

/** The username's lock alone: for clearing its failures (an admin's unlock) without racing a sign-in. */
export async function lockSignInUsername(tx: Tx, username: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`bridge:signin:user:${username}`}, 0))`;
}

/** The delay owed after `failures` failures when `free` of them cost nothing: 1 s, 2 s, 4 s … up to the cap. */
export function progressiveDelayMs(failures: number, free: number, maxDelayMs = DEFAULT_MAX_DELAY_MS): number {
  if (failures < free) return 0;
  return Math.min(maxDelayMs, BASE_DELAY_MS * 2 ** Math.min(30, failures - free));
}

type Tally = { n: number; last: Date | null };

/** Seconds until the next attempt is allowed, or 0 when it is allowed now. */
export async function signInRetryAfter(tx: Tx, username: string, ip: string | null, now: Date, limits: SignInLimits): Promise<number> {
  const since = new Date(now.getTime() - limits.windowMs);
  const maxDelayMs = limits.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  const [pair] = await tx.$queryRaw<Tally[]>`
    SELECT count(*)::int AS n, max(at) AS last FROM sign_in_attempts
    WHERE username = ${username} AND ip IS NOT DISTINCT FROM ${ip}::varchar AND NOT succeeded AND at > ${since}
      AND at > COALESCE((SELECT max(at) FROM sign_in_attempts WHERE username = ${username} AND ip IS NOT DISTINCT FROM ${ip}::varchar AND succeeded), '-infinity')`;
  const [user] = await tx.$queryRaw<Tally[]>`
    SELECT count(*)::int AS n, max(at) AS last FROM sign_in_attempts WHERE username = ${username} AND NOT succeeded AND at > ${since}`;
  let waitMs = 0;
  for (const [tally, free] of [[pair, limits.maxFailures], [user, limits.maxFailuresPerUser]] as const) {
    if (!tally?.last) continue;
    waitMs = Math.max(waitMs, tally.last.getTime() + progressiveDelayMs(tally.n, free, maxDelayMs) - now.getTime());
  }
  if (ip) {
    const ipFailures = await tx.$queryRaw<{ at: Date }[]>`
      SELECT at FROM sign_in_attempts WHERE ip = ${ip} AND NOT succeeded AND at > ${since}
      ORDER BY at DESC LIMIT ${limits.maxFailuresPerIp}`;
    waitMs = Math.max(waitMs, ceilingWaitMs(ipFailures, limits.maxFailuresPerIp, limits.windowMs, now));
  }
  return waitMs > 0 ? Math.max(1, Math.ceil(waitMs / 1000)) : 0;
}

/** With `max` failures in the window, the next attempt may come when the oldest of them leaves it. */
function ceilingWaitMs(failuresNewestFirst: { at: Date }[], max: number, windowMs: number, now: Date): number {
  if (failuresNewestFirst.length < max) return 0;
  return failuresNewestFirst[max - 1].at.getTime() + windowMs - now.getTime();
}

/**
 * The name an attempt is counted under. A typed name that matches no user may be a password typed into the wrong
 * field, so it is never stored as typed: unknown names are counted under a short digest (32 bits: enough to keep
 * different names apart for throttling, far too little to confirm a guess at what was typed).
 */
export function attemptKey(typed: string, knownUser: boolean): string {
  return knownUser ? typed : `?${sha256Hex(`bridge:unknown-user:${typed}`).slice(0, 8)}`;
}

export async function recordSignInAttempt(tx: Tx, attempt: { username: string; ip: string | null; succeeded: boolean; at: Date }): Promise<void> {
  await tx.signInAttempt.create({ data: { username: attempt.username.slice(0, 64), ip: attempt.ip?.slice(0, 64) ?? null, succeeded: attempt.succeeded, at: attempt.at } });
}

/** Forgets a username's failed sign-ins (all addresses): what an admin's "Unlock sign-in" does. Returns how many. */
export async function clearSignInFailures(tx: Tx, username: string): Promise<number> {
  return tx.$executeRaw`DELETE FROM sign_in_attempts WHERE username = ${username} AND NOT succeeded`;
}

export type SignInFailureState = { failures: number; locked: boolean };

/**
 * For the users page: each username's failed sign-ins in the window, and whether the next attempt would be refused
 * from at least one address (its tight limit) or from all (the per-username ceiling). Usernames without failures
 * are left out. The per-address limit is not a property of a user and is not shown.
 */
export async function signInFailureStates(client: Pick<Tx, '$queryRaw'>, now = new Date(), limits = signInLimits()): Promise<Map<string, SignInFailureState>> {
  const since = new Date(now.getTime() - limits.windowMs);
  const rows = await client.$queryRaw<{ username: string; failures: number; sinceSuccess: number }[]>`
    SELECT a.username, count(*)::int AS failures,
      count(*) FILTER (WHERE a.at > COALESCE((
        SELECT max(s.at) FROM sign_in_attempts s WHERE s.username = a.username AND s.ip IS NOT DISTINCT FROM a.ip AND s.succeeded), '-infinity'))::int AS "sinceSuccess"
    FROM sign_in_attempts a
    WHERE NOT a.succeeded AND a.at > ${since}
    GROUP BY a.username, a.ip`;
  const states = new Map<string, SignInFailureState>();
  for (const row of rows) {
    const state = states.get(row.username) ?? { failures: 0, locked: false };
    state.failures += row.failures;
    state.locked ||= row.sinceSuccess >= limits.maxFailures;
    states.set(row.username, state);
  }
  for (const state of states.values()) state.locked ||= state.failures >= limits.maxFailuresPerUser;
  return states;
}

/** Housekeeping: attempts older than a day count for nothing. */
export async function pruneSignInAttempts(client: Pick<Tx, '$executeRaw'>, now = new Date()): Promise<number> {
  const before = new Date(now.getTime() - Math.max(24 * 3_600_000, signInLimits().windowMs));
  return client.$executeRaw`DELETE FROM sign_in_attempts WHERE at < ${before}`;
}
