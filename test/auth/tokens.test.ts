import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { toErrorResponse } from '@/lib/http/respond';
import { requireRequestActor } from '@/lib/auth/request';
import { createApiToken, listApiTokens, revokeApiToken, verifyApiToken } from '@/lib/auth/tokens';
import { sha256Hex } from '@/lib/auth/secrets';
import { actorOf, apiRequest, makeUser, resetAuth, userWithToken } from '../auth-helpers';
import { eventually } from '../wait';

async function statusOf(promise: Promise<unknown>): Promise<{ status: number; body: { error?: { code: string; message: string } } }> {
  try {
    await promise;
    return { status: 200, body: {} };
  } catch (err) {
    const res = toErrorResponse(err);
    return { status: res.status, body: await res.json() };
  }
}

describe('API tokens', () => {
  beforeEach(resetAuth);

  it('are shown once at creation and stored only as sha256', async () => {
    const { user } = await makeUser(['viewer']);
    const { token, record } = await createApiToken({ name: 'ci' }, actorOf(user, 'session'));
    expect(token).toMatch(/^bc_[A-Za-z0-9_-]{43}$/);
    expect(record.prefix).toBe(token.slice(0, 11));
    expect(JSON.stringify(record)).not.toContain(token);
    const rows = await db().$queryRaw<{ row: string }[]>`SELECT row_to_json(t)::text AS row FROM api_tokens t`;
    expect(rows).toHaveLength(1);
    expect(rows[0].row).not.toContain(token);
    expect(rows[0].row).toContain(sha256Hex(token));
    // Listing never brings it back either.
    expect(JSON.stringify(await listApiTokens(actorOf(user, 'session')))).not.toContain(token.slice(11));
    // And the security record holds the prefix only.
    const events = await db().$queryRaw<{ row: string }[]>`SELECT row_to_json(e)::text AS row FROM auth_events e`;
    expect(events.map((e) => e.row).join()).not.toContain(token);
  });

  it('authenticate API requests as their owner, with the owner’s roles', async () => {
    const { user, token } = await userWithToken(['operator']);
    const actor = await requireRequestActor(apiRequest('/api/intents', { token, body: {} }), 'intents.create');
    expect(actor).toMatchObject({ name: user.username, userId: user.id, roles: ['operator'], via: 'token' });
    const lastUsed = (await db().apiToken.findFirst())!.lastUsedAt;
    expect(lastUsed).not.toBeNull();
  });

  it('stop working when revoked: 401', async () => {
    const { user, token, tokenId } = await userWithToken(['viewer']);
    await revokeApiToken(tokenId, actorOf(user, 'session'));
    const res = await statusOf(requireRequestActor(apiRequest('/api/intents', { token }), 'intents.read'));
    expect(res.status).toBe(401);
    expect(res.body.error?.code).toBe('unauthenticated');
    expect(res.body.error?.message).not.toContain(token);
  });

  it('stop working when expired or when the owner is disabled', async () => {
    const { user } = await makeUser(['viewer']);
    const now = new Date('2030-01-01T00:00:00Z');
    const { token } = await createApiToken({ name: 'short', expiresInDays: 1 }, actorOf(user, 'session'), now);
    expect(await verifyApiToken(token, new Date(now.getTime() + 86_400_000 - 1))).not.toBeNull();
    expect(await verifyApiToken(token, new Date(now.getTime() + 86_400_000))).toBeNull();

    const other = await userWithToken(['viewer']);
    expect(await verifyApiToken(other.token)).not.toBeNull();
    await db().user.update({ where: { id: other.user.id }, data: { disabled: true } });
    // Written straight to the table (as another instance or a psql session would), the change reaches this
    // process's token cache through its trigger's notification: within moments, bounded here.
    await eventually('the revoked token to stop verifying', async () => (await verifyApiToken(other.token)) === null);
  });

  it('refuse anything that is not a well-formed known token', async () => {
    const { token } = await userWithToken(['viewer']);
    for (const bad of ['', 'bc_', 'bc_short', token.slice(0, -1), `${token}x`, token.replace('bc_', 'BC_'), `Bearer ${token}`, 'bc_' + 'A'.repeat(43)]) {
      expect(await verifyApiToken(bad), bad).toBeNull();
    }
  });

  it('can be revoked by their owner and by admins, and look missing to anyone else', async () => {
    const owner = await userWithToken(['viewer']);
    const stranger = await makeUser(['operator']);
    const admin = await makeUser(['admin']);
    const denied = await statusOf(revokeApiToken(owner.tokenId, actorOf(stranger.user)));
    expect(denied.status).toBe(404);
    expect(await verifyApiToken(owner.token)).not.toBeNull();
    const revoked = await revokeApiToken(owner.tokenId, actorOf(admin.user));
    expect(revoked.revokedBy).toBe(admin.user.username);
    expect(await verifyApiToken(owner.token)).toBeNull();
    // Twice is fine and keeps the first revocation.
    expect((await revokeApiToken(owner.tokenId, actorOf(owner.user))).revokedBy).toBe(admin.user.username);
  });

  it('list: your own; everyone’s only with tokens.manage', async () => {
    const a = await userWithToken(['viewer']);
    const b = await userWithToken(['viewer']);
    const admin = await userWithToken(['admin']);
    expect((await listApiTokens(actorOf(a.user))).map((t) => t.id)).toEqual([a.tokenId]);
    expect((await statusOf(listApiTokens(actorOf(a.user), { all: true }))).status).toBe(403);
    expect((await listApiTokens(actorOf(admin.user), { all: true })).map((t) => t.id).sort()).toEqual([a.tokenId, b.tokenId, admin.tokenId].sort());
  });

  it('validate their input at the boundary', async () => {
    const { user } = await makeUser(['viewer']);
    for (const bad of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 'ok', expiresInDays: 0 }, { name: 'ok', expiresInDays: 'soon' }, null, 'name']) {
      expect((await statusOf(createApiToken(bad, actorOf(user)))).status, JSON.stringify(bad)).toBe(400);
    }
    expect((await statusOf(revokeApiToken('not-a-uuid', actorOf(user)))).status).toBe(400);
    expect(await db().apiToken.count()).toBe(0);
  });
});
