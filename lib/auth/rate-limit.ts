import type { Tx } from '@/lib/db/client';
import { env } from '@/lib/env';

/**
 * Sign-in rate limiting from the `sign_in_attempts` table, so every console instance counts the same attempts.
 * Callers hold `lockSignInKeys` for the username (and address) in the same transaction as the check and the
 * recording of the attempt: concurrent guesses queue up and the limits are exact, not "roughly N".
 *
 * Three limits, each over the window (SIGNIN_WINDOW_MINUTES):
 * - per username from one client address (SIGNIN_MAX_FAILURES, tight): failures since that address last signed
 *   in as that user. Someone guessing from their own machine is stopped quickly, while the real user, signing in
 *   from elsewhere, is not locked out by them;
 * - per username from all addresses (SIGNIN_MAX_FAILURES_PER_USER, loose): slows guessing spread over many
 *   addresses. Successes do not reset it (a distributed guesser would otherwise get a fresh allowance each time
 *   the real user signs in); when it is reached the right password waits too, and an admin can unlock;
 * - per client address, any username (SIGNIN_MAX_FAILURES_PER_IP): stops one address spraying many usernames.
 *
 * The address is known only with TRUST_PROXY (lib/auth/client-info.ts). Without it every request counts as one
 * unknown address, so the tight limit falls back to being per username: safe against guessing, but then anyone can
 * lock a user out for the window, and the users page's "Unlock sign-in" is the remedy.
 */
export type SignInLimits = { maxFailures: number; maxFailuresPerUser: number; maxFailuresPerIp: number; windowMs: number };

export function signInLimits(): SignInLimits {
  const e = env();
  return {
    maxFailures: e.SIGNIN_MAX_FAILURES,
    maxFailuresPerUser: e.SIGNIN_MAX_FAILURES_PER_USER,
    maxFailuresPerIp: e.SIGNIN_MAX_FAILURES_PER_IP,
    windowMs: e.SIGNIN_WINDOW_MINUTES * 60_000,
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

/** Seconds until the next attempt is allowed, or 0 when it is allowed now. */
export async function signInRetryAfter(tx: Tx, username: string, ip: string | null, now: Date, limits: SignInLimits): Promise<number> {
  const since = new Date(now.getTime() - limits.windowMs);
  const pairFailures = await tx.$queryRaw<{ at: Date }[]>`
    SELECT at FROM sign_in_attempts
    WHERE username = ${username} AND ip IS NOT DISTINCT FROM ${ip}::varchar AND NOT succeeded AND at > ${since}
      AND at > COALESCE((SELECT max(at) FROM sign_in_attempts WHERE username = ${username} AND ip IS NOT DISTINCT FROM ${ip}::varchar AND succeeded), '-infinity')
    ORDER BY at DESC LIMIT ${limits.maxFailures}`;
  let wait = waitFor(pairFailures, limits.maxFailures, limits.windowMs, now);
  const userFailures = await tx.$queryRaw<{ at: Date }[]>`
    SELECT at FROM sign_in_attempts WHERE username = ${username} AND NOT succeeded AND at > ${since}
    ORDER BY at DESC LIMIT ${limits.maxFailuresPerUser}`;
  wait = Math.max(wait, waitFor(userFailures, limits.maxFailuresPerUser, limits.windowMs, now));
  if (ip) {
    const ipFailures = await tx.$queryRaw<{ at: Date }[]>`
      SELECT at FROM sign_in_attempts WHERE ip = ${ip} AND NOT succeeded AND at > ${since}
      ORDER BY at DESC LIMIT ${limits.maxFailuresPerIp}`;
    wait = Math.max(wait, waitFor(ipFailures, limits.maxFailuresPerIp, limits.windowMs, now));
  }
  return wait;
}

/** With `max` failures in the window, the next attempt may come when the oldest of them leaves it. */
function waitFor(failuresNewestFirst: { at: Date }[], max: number, windowMs: number, now: Date): number {
  if (failuresNewestFirst.length < max) return 0;
  const oldest = failuresNewestFirst[max - 1].at.getTime();
  return Math.max(1, Math.ceil((oldest + windowMs - now.getTime()) / 1000));
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
