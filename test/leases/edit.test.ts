import { beforeEach, describe, expect, it } from 'vitest';
import { LeaseNotHeldError } from '@/lib/leases/errors';
import { leaseHistory } from '@/lib/leases/events';
import { currentEditLease, editLeaseResource, releaseEditLease, renewEditLease, takeEditLease } from '@/lib/leases/edit';
import { ValidationError } from '@/lib/intents/errors';
import { makeIntent, resetDatabase } from '../helpers';

describe('reviewers’ edit leases', () => {
  beforeEach(resetDatabase);

  it('the first reviewer holds it, the second is told who and until when; renew and release by the holder only', async () => {
    const intent = await makeIntent('PROCESSED');
    const alice = await takeEditLease(intent.id, 'alice');
    if (!alice.held) throw new Error('not held');
    expect(await takeEditLease(intent.id.toUpperCase(), 'bob')).toEqual({ held: false, owner: 'alice', expiresAt: alice.expiresAt });
    expect(await currentEditLease(intent.id)).toEqual({ owner: 'alice', expiresAt: alice.expiresAt });
    const renewed = await renewEditLease(intent.id, alice.token, 'alice');
    expect(Date.parse(renewed.expiresAt)).toBeGreaterThanOrEqual(Date.parse(alice.expiresAt));
    await expect(renewEditLease(intent.id, alice.token, 'bob')).rejects.toBeInstanceOf(LeaseNotHeldError);
    expect(await releaseEditLease(intent.id, alice.token, 'bob')).toEqual({ released: false });
    expect(await releaseEditLease(intent.id, alice.token, 'alice')).toEqual({ released: true });
    expect(await currentEditLease(intent.id)).toBeNull();
    expect(await takeEditLease(intent.id, 'bob')).toMatchObject({ held: true, owner: 'bob', token: alice.token + 1 });
    const events = await leaseHistory(editLeaseResource(intent.id));
    expect(events.map((e) => e.event)).toEqual(['acquired', 'denied', 'refreshed', 'released', 'acquired']);
  });

  it('refuses a malformed intent id as bad input', async () => {
    await expect(takeEditLease('not-a-uuid', 'alice')).rejects.toBeInstanceOf(ValidationError);
  });
});
