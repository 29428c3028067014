import pg from 'pg';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { forgetVerifiedCredentials } from '@/lib/auth/token-cache';
import { createSession, revokeSession, validateSession } from '@/lib/auth/sessions';
import { revokeApiToken, verifyApiToken } from '@/lib/auth/tokens';
import { setUserDisabled } from '@/lib/auth/users';
import { liveHub } from '@/lib/live/hub';
import { actorOf, makeUser, resetAuth, userWithSession, userWithToken } from '../auth-helpers';
import { eventually } from '../wait';

/**
 * Verified API tokens are cached per process; every change that ends or narrows a token must still take effect at
 * once: here (the process that made it drops its cache before answering) and on every other instance (a trigger
 * notifies, each instance's live listener drops its cache) — including a change made outside the console.
 */
const outside = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'bridge-test:psql' });
let connected = false;
afterAll(async () => {
  if (connected) await outside.end();
});

beforeEach(async () => {
  await resetAuth();
  forgetVerifiedCredentials();
  // The cache only serves while the listener is up: make sure it is, so the cached path is what is tested.
  const hub = await liveHub();
  await eventually('the live hub to listen', () => hub.isListening());
});


describe('the verified-token cache', () => {
  it('a revoke through the console takes effect before the revoke answers', async () => {
    const { user, token, tokenId } = await userWithToken(['operator']);
    expect(await verifyApiToken(token)).not.toBeNull();
    expect(await verifyApiToken(token)).not.toBeNull();
    await revokeApiToken(tokenId, actorOf(user, 'session'));
    expect(await verifyApiToken(token)).toBeNull();
  });

  it('disabling the owner takes effect before the change answers', async () => {
    const { user, token } = await userWithToken(['operator']);
    const { user: admin } = await makeUser(['admin']);
    expect(await verifyApiToken(token)).not.toBeNull();
    await setUserDisabled(user.id, true, actorOf(admin, 'session'));
    expect(await verifyApiToken(token)).toBeNull();
  });

  it('a revoke made elsewhere (another instance, someone’s psql) reaches this instance through the notification', async () => {
    const { token, tokenId } = await userWithToken(['operator']);
    expect(await verifyApiToken(token)).not.toBeNull();
    if (!connected) {
      await outside.connect();
      connected = true;
    }
    await outside.query('UPDATE api_tokens SET revoked_at = now(), revoked_by = $2 WHERE id = $1', [tokenId, 'psql']);
    await eventually('the token to stop verifying', async () => (await verifyApiToken(token)) === null);
  });

  it('a role change made elsewhere narrows the cached actor too', async () => {
    const { user, token } = await userWithToken(['operator']);
    expect((await verifyApiToken(token))?.roles).toEqual(['operator']);
    if (!connected) {
      await outside.connect();
      connected = true;
    }
    await outside.query(`UPDATE users SET roles = '{viewer}' WHERE id = $1`, [user.id]);
    const roles = await eventually('the role change to reach the cache', async () => {
      const now = (await verifyApiToken(token))?.roles;
      return !now?.includes('operator') && (now ?? []);
    });
    expect(roles).toEqual(['viewer']);
  });
});

async function outsideClient(): Promise<pg.Client> {
  if (!connected) {
    await outside.connect();
    connected = true;
  }
  return outside;
}


describe('the verified-session cache', () => {
  it('serves a session verified moments ago without reading the sessions table', async () => {
    const { secret } = await userWithSession(['viewer']);
    expect(await validateSession(secret)).not.toBeNull();
    // With the table locked, a lookup would wait for the lock; the cached verification answers at once.
    const holder = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'bridge-test:holder' });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE');
      const answer = await Promise.race([validateSession(secret), new Promise((r) => setTimeout(() => r('waited for the table'), 5_000))]);
      expect(answer).toMatchObject({ actor: { via: 'session' } });
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  it('a sign-out through the console takes effect before it answers', async () => {
    const { secret } = await userWithSession(['viewer']);
    expect(await validateSession(secret)).not.toBeNull();
    expect(await validateSession(secret)).not.toBeNull();
    await revokeSession(secret);
    expect(await validateSession(secret)).toBeNull();
  });

  it('disabling the user takes effect before the change answers', async () => {
    const { user, secret } = await userWithSession(['operator']);
    const { user: admin } = await makeUser(['admin']);
    expect(await validateSession(secret)).not.toBeNull();
    await setUserDisabled(user.id, true, actorOf(admin, 'session'));
    expect(await validateSession(secret)).toBeNull();
  });

  it('a sign-out made elsewhere (another instance, someone’s psql) reaches this instance through the notification', async () => {
    const { secret, session } = await userWithSession(['viewer']);
    expect(await validateSession(secret)).not.toBeNull();
    await (await outsideClient()).query('DELETE FROM sessions WHERE id = $1', [session.id]);
    await eventually('the session to stop validating', async () => (await validateSession(secret)) === null);
  });

  it('a session made to expire sooner elsewhere is refused here too', async () => {
    const { user } = await makeUser(['viewer']);
    const { secret, session } = await createSession(user.id);
    expect(await validateSession(secret)).not.toBeNull();
    await (await outsideClient()).query('UPDATE sessions SET expires_at = now() - interval \'1 second\' WHERE id = $1', [session.id]);
    await eventually('the session to stop validating', async () => (await validateSession(secret)) === null);
  });
});
