import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { validateSession } from '@/lib/auth/sessions';
import { signIn } from '@/lib/auth/users';
import { makeUser, resetAuth, TEST_PASSWORD } from '../auth-helpers';

const limits = { maxFailures: 5, maxFailuresPerIp: 8, windowMs: 15 * 60_000 };
const t0 = new Date('2030-01-01T00:00:00Z');
const at = (ms: number) => new Date(t0.getTime() + ms);

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

describe('sign-in', () => {
  beforeEach(resetAuth);

  it('opens a session for the right password (username case-insensitive) and records it', async () => {
    const { user } = await makeUser(['reviewer'], { username: 'dana' });
    const result = await signIn({ username: '  Dana ', password: TEST_PASSWORD }, { ip: '10.1.1.1', userAgent: 'ua' }, { now: t0, limits });
    expect(result.user.username).toBe('dana');
    const valid = await validateSession(result.secret, at(1000));
    expect(valid?.actor).toMatchObject({ name: 'dana', userId: user.id, roles: ['reviewer'] });
    expect((await db().user.findUnique({ where: { id: user.id } }))!.lastSignInAt).toEqual(t0);
    expect(await db().signInAttempt.count({ where: { succeeded: true } })).toBe(1);
    expect(await db().authEvent.count({ where: { action: 'auth.sign_in', subject: 'dana' } })).toBe(1);
  });

  it('answers an unknown user exactly like a wrong password', async () => {
    await makeUser(['viewer'], { username: 'erin' });
    const wrong = await codeOf(signIn({ username: 'erin', password: 'nope nope nope' }, {}, { now: t0, limits }));
    const unknown = await codeOf(signIn({ username: 'nobody', password: 'nope nope nope' }, {}, { now: t0, limits }));
    expect(wrong).toBe('invalid_credentials');
    expect(unknown).toBe('invalid_credentials');
    expect(await db().session.count()).toBe(0);
  });

  it('tells a disabled user so only after the right password', async () => {
    await makeUser(['viewer'], { username: 'fay', disabled: true });
    expect(await codeOf(signIn({ username: 'fay', password: 'wrong password!' }, {}, { now: t0, limits }))).toBe('invalid_credentials');
    expect(await codeOf(signIn({ username: 'fay', password: TEST_PASSWORD }, {}, { now: t0, limits }))).toBe('account_disabled');
    expect(await db().session.count()).toBe(0);
  });

  it('refuses malformed input with a 400 before any database work', async () => {
    for (const bad of [{}, { username: 'x' }, { password: 'y' }, { username: '', password: 'y' }, { username: 'x', password: 'y'.repeat(257) }, null, 42]) {
      expect(await codeOf(signIn(bad, {}, { now: t0, limits }))).toBe('invalid_request');
    }
    expect(await db().signInAttempt.count()).toBe(0);
  });

  it('locks a username after too many failures, even for the right password, until the window passes', async () => {
    await makeUser(['viewer'], { username: 'gus' });
    for (let i = 0; i < 5; i++) expect(await codeOf(signIn({ username: 'gus', password: `wrong-${i}-xxxx` }, {}, { now: at(i * 1000), limits }))).toBe('invalid_credentials');
    let limited: unknown;
    try {
      await signIn({ username: 'gus', password: TEST_PASSWORD }, {}, { now: at(10_000), limits });
    } catch (err) {
      limited = err;
    }
    expect(limited).toMatchObject({ code: 'rate_limited', httpStatus: 429 });
    // The oldest failure (t0) leaves the 15-minute window at t0+15m: 15m - 10 s from now.
    expect((limited as { retryAfterSeconds: number }).retryAfterSeconds).toBe(15 * 60 - 10);
    // Refused attempts are not recorded, so hammering does not extend the lock.
    expect(await db().signInAttempt.count()).toBe(5);
    expect(await codeOf(signIn({ username: 'gus', password: TEST_PASSWORD }, {}, { now: at(15 * 60_000 + 1), limits }))).toBe('ok');
  });

  it('forgets earlier failures after a successful sign-in', async () => {
    await makeUser(['viewer'], { username: 'hal' });
    for (let i = 0; i < 4; i++) await codeOf(signIn({ username: 'hal', password: 'wrong password' }, {}, { now: at(i), limits }));
    expect(await codeOf(signIn({ username: 'hal', password: TEST_PASSWORD }, {}, { now: at(10), limits }))).toBe('ok');
    for (let i = 0; i < 4; i++) expect(await codeOf(signIn({ username: 'hal', password: 'wrong password' }, {}, { now: at(20 + i), limits }))).toBe('invalid_credentials');
    expect(await codeOf(signIn({ username: 'hal', password: TEST_PASSWORD }, {}, { now: at(30), limits }))).toBe('ok');
  });

  it('limits unknown usernames too', async () => {
    for (let i = 0; i < 5; i++) await codeOf(signIn({ username: 'ghost', password: 'wrong password' }, {}, { now: at(i), limits }));
    expect(await codeOf(signIn({ username: 'ghost', password: 'wrong password' }, {}, { now: at(10), limits }))).toBe('rate_limited');
  });

  it('limits a client address across usernames', async () => {
    await makeUser(['viewer'], { username: 'ivy' });
    const ip = '203.0.113.9';
    for (let i = 0; i < 8; i++) await codeOf(signIn({ username: `spray-${i}`, password: 'wrong password' }, { ip }, { now: at(i), limits }));
    expect(await codeOf(signIn({ username: 'ivy', password: TEST_PASSWORD }, { ip }, { now: at(100), limits }))).toBe('rate_limited');
    // Another address is unaffected.
    expect(await codeOf(signIn({ username: 'ivy', password: TEST_PASSWORD }, { ip: '203.0.113.10' }, { now: at(100), limits }))).toBe('ok');
  });

  it('is exact under concurrency: 20 simultaneous guesses get exactly 5 password checks', async () => {
    await makeUser(['viewer'], { username: 'jo' });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => codeOf(signIn({ username: 'jo', password: `guess-${i}-xxxxx` }, {}, { now: t0, limits }))),
    );
    expect(results.filter((r) => r === 'invalid_credentials')).toHaveLength(5);
    expect(results.filter((r) => r === 'rate_limited')).toHaveLength(15);
    expect(await db().signInAttempt.count({ where: { username: 'jo' } })).toBe(5);
  });
});
