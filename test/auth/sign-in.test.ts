import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { validateSession } from '@/lib/auth/sessions';
import { signIn, signInFailuresByUsername, unlockSignIn } from '@/lib/auth/users';
import { actorOf, makeUser, resetAuth, TEST_PASSWORD } from '../auth-helpers';

// Small numbers so the tests stay short; their relations are the defaults' (pair < per address, pair < per user).
const limits = { maxFailures: 5, maxFailuresPerUser: 12, maxFailuresPerIp: 8, windowMs: 15 * 60_000 };
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

  it('answers a disabled account the same whether or not the password was right', async () => {
    await makeUser(['viewer'], { username: 'fay', disabled: true });
    let wrong: unknown, right: unknown;
    await signIn({ username: 'fay', password: 'wrong password!' }, {}, { now: t0, limits }).catch((e: unknown) => (wrong = e));
    await signIn({ username: 'fay', password: TEST_PASSWORD }, {}, { now: at(1), limits }).catch((e: unknown) => (right = e));
    expect(wrong).toMatchObject({ code: 'invalid_credentials', httpStatus: 401 });
    expect(right).toMatchObject({ code: 'invalid_credentials', httpStatus: 401, message: (wrong as Error).message });
    expect(await db().session.count()).toBe(0);
    // Both count as failures; the security record names the reason, not whether the password matched.
    expect(await db().signInAttempt.count({ where: { username: 'fay', succeeded: false } })).toBe(2);
    const events = await db().authEvent.findMany({ where: { action: 'auth.sign_in_failed', subject: 'fay' } });
    expect(events.map((e) => e.details)).toEqual([{ reason: 'disabled' }, { reason: 'disabled' }]);
  });

  it('never stores a typed name that matches no user (it may be a password)', async () => {
    const typed = 'Tr0ub4dor&3-secret';
    expect(await codeOf(signIn({ username: typed, password: 'whatever password' }, { ip: '10.9.9.9' }, { now: t0, limits }))).toBe('invalid_credentials');
    const attempts = await db().signInAttempt.findMany();
    const events = await db().authEvent.findMany();
    const stored = JSON.stringify([attempts, events], (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)).toLowerCase();
    expect(stored).not.toContain(typed.toLowerCase());
    expect(attempts).toHaveLength(1);
    expect(attempts[0].username).toMatch(/^\?[0-9a-f]{8}$/);
    // Still throttled under that digest: the same unknown name is counted together.
    for (let i = 1; i < 5; i++) await codeOf(signIn({ username: typed, password: 'whatever password' }, { ip: '10.9.9.9' }, { now: at(i), limits }));
    expect(await codeOf(signIn({ username: typed, password: 'whatever password' }, { ip: '10.9.9.9' }, { now: at(10), limits }))).toBe('rate_limited');
  });

  it("a stranger's 20 wrong passwords do not lock the right person out: they get in within a minute", async () => {
    await makeUser(['admin'], { username: 'admin' });
    // The stranger shares the "unknown" address with everyone (no TRUST_PROXY) and waits out each delay.
    let now = 0;
    const waits: number[] = [];
    for (let wrong = 0; wrong < 20; ) {
      let refused: unknown;
      await signIn({ username: 'admin', password: `guess-${wrong}-xxxxx` }, {}, { now: at(now), limits }).catch((e: unknown) => (refused = e));
      if ((refused as { code?: string }).code === 'rate_limited') {
        const seconds = (refused as { retryAfterSeconds: number }).retryAfterSeconds;
        waits.push(seconds);
        now += seconds * 1000;
        continue;
      }
      expect(refused).toMatchObject({ code: 'invalid_credentials' });
      wrong++;
    }
    // Progressive: the delays double and then stay at the cap; never a lockout.
    expect(Math.max(...waits)).toBe(30);
    expect(waits.slice(0, 4)).toEqual([1, 2, 4, 8]);
    // Guessing is slow: 20 guesses took minutes.
    expect(now).toBeGreaterThan(5 * 60_000);
    // The right person, right after the last wrong guess, is asked to wait at most the cap, then signs in.
    let first: unknown;
    await signIn({ username: 'admin', password: TEST_PASSWORD }, {}, { now: at(now), limits }).catch((e: unknown) => (first = e));
    const wait = first ? (first as { retryAfterSeconds: number }).retryAfterSeconds : 0;
    expect(wait).toBeLessThanOrEqual(30);
    expect(await codeOf(signIn({ username: 'admin', password: TEST_PASSWORD }, {}, { now: at(now + wait * 1000), limits }))).toBe('ok');
  });

  it('refuses malformed input with a 400 before any database work', async () => {
    for (const bad of [{}, { username: 'x' }, { password: 'y' }, { username: '', password: 'y' }, { username: 'x', password: 'y'.repeat(257) }, null, 42]) {
      expect(await codeOf(signIn(bad, {}, { now: t0, limits }))).toBe('invalid_request');
    }
    expect(await db().signInAttempt.count()).toBe(0);
  });

  it('delays a username at one address after its free failures, even for the right password, then lets it in', async () => {
    await makeUser(['viewer'], { username: 'gus' });
    for (let i = 0; i < 5; i++) expect(await codeOf(signIn({ username: 'gus', password: `wrong-${i}-xxxx` }, {}, { now: at(i * 100), limits }))).toBe('invalid_credentials');
    let limited: unknown;
    await signIn({ username: 'gus', password: TEST_PASSWORD }, {}, { now: at(500), limits }).catch((e: unknown) => (limited = e));
    expect(limited).toMatchObject({ code: 'rate_limited', httpStatus: 429, retryAfterSeconds: 1 });
    // Refused attempts are not recorded, so hammering does not extend the delay.
    for (let i = 0; i < 10; i++) await codeOf(signIn({ username: 'gus', password: 'hammer hammer' }, {}, { now: at(600 + i), limits }));
    expect(await db().signInAttempt.count()).toBe(5);
    expect(await codeOf(signIn({ username: 'gus', password: TEST_PASSWORD }, {}, { now: at(1_400), limits }))).toBe('ok');
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

  it('a wrong-password flood from one address does not stop the same user signing in from another', async () => {
    await makeUser(['viewer'], { username: 'kai' });
    const attacker = '198.51.100.7';
    for (let i = 0; i < 5; i++) expect(await codeOf(signIn({ username: 'kai', password: `wrong-${i}-xxxx` }, { ip: attacker }, { now: at(i), limits }))).toBe('invalid_credentials');
    // The flooding address is stopped, even if it now guessed right...
    expect(await codeOf(signIn({ username: 'kai', password: TEST_PASSWORD }, { ip: attacker }, { now: at(10), limits }))).toBe('rate_limited');
    // ...but kai, elsewhere, signs in, and doing so does not lift the attacker's lock.
    expect(await codeOf(signIn({ username: 'kai', password: TEST_PASSWORD }, { ip: '192.0.2.44' }, { now: at(20), limits }))).toBe('ok');
    expect(await codeOf(signIn({ username: 'kai', password: 'wrong-again-xxxx' }, { ip: attacker }, { now: at(30), limits }))).toBe('rate_limited');
    // Without a known address (no TRUST_PROXY) requests share one "unknown" address: a separate count again.
    expect(await codeOf(signIn({ username: 'kai', password: TEST_PASSWORD }, {}, { now: at(40), limits }))).toBe('ok');
  });

  it('still slows guessing spread over many addresses once the per-username allowance is spent, successes notwithstanding', async () => {
    await makeUser(['viewer'], { username: 'lou' });
    for (let i = 0; i < 12; i++) {
      expect(await codeOf(signIn({ username: 'lou', password: `wrong-${i}-xxxx` }, { ip: `203.0.113.${100 + i}` }, { now: at(i * 1000), limits }))).toBe('invalid_credentials');
      // A success in between does not hand the guessers a fresh allowance.
      if (i === 5) expect(await codeOf(signIn({ username: 'lou', password: TEST_PASSWORD }, { ip: '192.0.2.1' }, { now: at(i * 1000 + 1), limits }))).toBe('ok');
    }
    let limited: unknown;
    await signIn({ username: 'lou', password: TEST_PASSWORD }, { ip: '192.0.2.1' }, { now: at(11_500), limits }).catch((e: unknown) => (limited = e));
    expect(limited).toMatchObject({ code: 'rate_limited', retryAfterSeconds: 1 });
    const states = await signInFailuresByUsername(actorOf((await makeUser(['admin'])).user), at(11_500), limits);
    expect(states.get('lou')).toEqual({ failures: 12, locked: true });
    expect(await codeOf(signIn({ username: 'lou', password: TEST_PASSWORD }, { ip: '192.0.2.1' }, { now: at(12_000), limits }))).toBe('ok');
  });

  it('an admin unlocks a user: their failures are forgotten, the change is audited, and only admins may', async () => {
    const admin = actorOf((await makeUser(['admin'], { username: 'root-ann' })).user);
    const { user } = await makeUser(['operator'], { username: 'max' });
    for (let i = 0; i < 5; i++) await codeOf(signIn({ username: 'max', password: `wrong-${i}-xxxx` }, {}, { now: at(i), limits }));
    expect(await codeOf(signIn({ username: 'max', password: TEST_PASSWORD }, {}, { now: at(10), limits }))).toBe('rate_limited');
    expect((await signInFailuresByUsername(admin, at(10), limits)).get('max')).toEqual({ failures: 5, locked: true });

    const operator = actorOf((await makeUser(['operator', 'reviewer', 'oncall', 'viewer'])).user);
    expect(await codeOf(unlockSignIn(user.id, operator))).toBe('forbidden');
    expect(await codeOf(signInFailuresByUsername(operator))).toBe('forbidden');
    expect(await codeOf(unlockSignIn('00000000-0000-4000-8000-000000000000', admin))).toBe('not_found');

    expect(await unlockSignIn(user.id, admin)).toMatchObject({ user: { username: 'max' }, clearedFailures: 5 });
    expect((await signInFailuresByUsername(admin, at(20), limits)).has('max')).toBe(false);
    expect(await codeOf(signIn({ username: 'max', password: TEST_PASSWORD }, {}, { now: at(20), limits }))).toBe('ok');
    const events = await db().authEvent.findMany({ where: { action: 'user.sign_in_unlocked' } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actor: 'root-ann', subject: 'max', details: { clearedFailures: 5 } });
  });

  it('is exact under concurrency for the per-username ceiling too: 30 guesses from 30 addresses at once get exactly 12 checks', async () => {
    await makeUser(['viewer'], { username: 'ned' });
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => codeOf(signIn({ username: 'ned', password: `guess-${i}-xxxxx` }, { ip: `198.18.0.${i + 1}` }, { now: t0, limits }))),
    );
    expect(results.filter((r) => r === 'invalid_credentials')).toHaveLength(12);
    expect(results.filter((r) => r === 'rate_limited')).toHaveLength(18);
    expect(await db().signInAttempt.count({ where: { username: 'ned' } })).toBe(12);
  });
});
