import type { Tx } from '@/lib/db/client';
import { env } from '@/lib/env';

/**
 * Sign-in rate limiting from the `sign_in_attempts` table, so every console instance counts the same attempts.
 * Callers hold `lockSignInKeys` for the username (and address) in the same transaction as the check and the
 * recording of the attempt: concurrent guesses queue up and the limit is exact, not "roughly N".
 *
 * - per username: failures since its last successful sign-in, within the window;
 * - per client address (only when it is known, i.e. TRUST_PROXY): failures within the window, any username.
 */
export type SignInLimits = { maxFailures: number; maxFailuresPerIp: number; windowMs: number };

export function signInLimits(): SignInLimits {
  const e = env();
  return { maxFailures: e.SIGNIN_MAX_FAILURES, maxFailuresPerIp: e.SIGNIN_MAX_FAILURES_PER_IP, windowMs: e.SIGNIN_WINDOW_MINUTES * 60_000 };
}

/** Advisory locks in a fixed order (address, then username), so two sign-ins never wait on each other in a cycle. */
export async function lockSignInKeys(tx: Tx, username: string, ip: string | null): Promise<void> {
  if (ip) await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`bridge:signin:ip:${ip}`}, 0))`;
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`bridge:signin:user:${username}`}, 0))`;
}

/** Seconds until the next attempt is allowed, or 0 when it is allowed now. */
export async function signInRetryAfter(tx: Tx, username: string, ip: string | null, now: Date, limits: SignInLimits): Promise<number> {
  const since = new Date(now.getTime() - limits.windowMs);
  const userFailures = await tx.$queryRaw<{ at: Date }[]>`
    SELECT at FROM sign_in_attempts
    WHERE username = ${username} AND NOT succeeded AND at > ${since}
      AND at > COALESCE((SELECT max(at) FROM sign_in_attempts WHERE username = ${username} AND succeeded), '-infinity')
    ORDER BY at DESC LIMIT ${limits.maxFailures}`;
  let wait = waitFor(userFailures, limits.maxFailures, limits.windowMs, now);
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

/** Housekeeping: attempts older than a day count for nothing. */
export async function pruneSignInAttempts(client: Pick<Tx, '$executeRaw'>, now = new Date()): Promise<number> {
  const before = new Date(now.getTime() - Math.max(24 * 3_600_000, signInLimits().windowMs));
  return client.$executeRaw`DELETE FROM sign_in_attempts WHERE at < ${before}`;
}
