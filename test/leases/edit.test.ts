import { beforeEach, describe, expect, it } from 'vitest';
import { LeaseNotYoursError } from '@/lib/leases/errors';
import { leaseHistory } from '@/lib/leases/events';
import { currentEditLease, editLeaseResource, releaseEditLease, renewEditLease, takeEditLease } from '@/lib/leases/edit';
import type { LeaseActor } from '@/lib/leases/service';
import { ValidationError } from '@/lib/shared/errors';
import { makeIntent, resetDatabase } from '../helpers';

const session = (name: string, roles: LeaseActor['roles'] = ['reviewer']): LeaseActor => ({ name, userId: `id-${name}`, roles, via: 'session', credentialId: `session-${name}` });

describe('reviewers’ edit leases', () => {
  beforeEach(resetDatabase);

  it('the first reviewer holds it, the second is told who and until when; renew and release by the holder only', async () => {
    const intent = await makeIntent('PROCESSED');
    const alice = await takeEditLease(intent.id, session('alice'));
    if (!alice.held) throw new Error('not held');
    expect(await takeEditLease(intent.id.toUpperCase(), session('bob'))).toEqual({ held: false, owner: 'alice', expiresAt: alice.expiresAt, mine: false });
    expect(await currentEditLease(intent.id, 'bob')).toEqual({ owner: 'alice', actor: 'alice', expiresAt: alice.expiresAt, mine: false });
    // Alice in another tab is told it is hers, not somebody else's.
    expect(await currentEditLease(intent.id, 'alice')).toMatchObject({ owner: 'alice', mine: true });
    expect(await takeEditLease(intent.id, { ...session('alice'), credentialId: 'another-tab' })).toEqual({ held: false, owner: 'alice', expiresAt: alice.expiresAt, mine: true });
    // Alice in another browser (another session of the same user) may renew it.
    const renewed = await renewEditLease(intent.id, alice.token, { ...session('alice'), credentialId: 'another-session' });
    expect(Date.parse(renewed.expiresAt)).toBeGreaterThanOrEqual(Date.parse(alice.expiresAt));
    // Bob names alice's token under his own name: not held. An on-call user, or an operator, gets nowhere either.
    await expect(renewEditLease(intent.id, alice.token, session('bob'))).rejects.toMatchObject({ code: 'lease_not_held' });
    expect(await releaseEditLease(intent.id, alice.token, session('bob'))).toEqual({ released: false });
    expect(await releaseEditLease(intent.id, alice.token, session('carol', ['oncall', 'operator']))).toEqual({ released: false });
    expect(await releaseEditLease(intent.id, alice.token, session('alice'))).toEqual({ released: true });
    expect(await currentEditLease(intent.id)).toBeNull();
    expect(await takeEditLease(intent.id, session('bob'))).toMatchObject({ held: true, owner: 'bob', token: alice.token + 1 });
    const events = await leaseHistory(editLeaseResource(intent.id));
    expect(events.map((e) => [e.event, e.owner, e.actor])).toEqual([
      ['acquired', 'alice', 'alice'],
      ['denied', 'bob', 'bob'],
      ['denied', 'alice', 'alice'],
      ['refreshed', 'alice', 'alice'],
      ['released', 'alice', 'alice'],
      ['acquired', 'bob', 'bob'],
    ]);
  });

  it('a lease taken by one user is not renewed by another user who learnt its owner and token', async () => {
    const intent = await makeIntent('PROCESSED');
    const alice = await takeEditLease(intent.id, session('alice'));
    if (!alice.held) throw new Error('not held');
    // A second user named alice cannot exist; a user whose session claims the name but not the id is not her.
    const impostor = { ...session('alice'), userId: 'id-someone-else' };
    await expect(renewEditLease(intent.id, alice.token, impostor)).rejects.toBeInstanceOf(LeaseNotYoursError);
    expect(await releaseEditLease(intent.id, alice.token, impostor)).toEqual({ released: false });
    expect(await currentEditLease(intent.id)).toMatchObject({ owner: 'alice', actor: 'alice' });
  });

  it('refuses a malformed intent id as bad input', async () => {
    await expect(takeEditLease('not-a-uuid', session('alice'))).rejects.toBeInstanceOf(ValidationError);
  });
});
