import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { concurrencySettings } from '@/lib/env';
import { updateIntentStatus } from '@/lib/intents/commands';
import { getIntentConflicts } from '@/lib/intents/queries';
import { dbFingerprint, holdRowLocks, resetEngine } from '../barriers';
import { intentRow, makeIntent, tester } from '../helpers';
import { api, signInApiCaller } from './route-client';
import { withSettings } from '../settings';

// A short lock timeout lets the API's own 423 and 503 answers be reached in a fraction of a second instead of the
// default 5 s.
withSettings({ LOCK_TIMEOUT_MS: '300' });

/**
 * The API under contention: lock waits that run out are 423 lock_timeout (status, bulk, corrections); a stale
 * expectedVersion is a conflict even when the intent has meanwhile reached a state that would refuse the command
 * anyway. A deadlock inside a request: deadlock-in-request.test.ts.
 */
beforeAll(async () => {
  await resetEngine();
  await signInApiCaller();
});
beforeEach(resetEngine);

describe('lock waits that run out', () => {
  it('the configured lock timeout is the one in force for these requests', () => {
    expect(concurrencySettings().lockTimeoutMs).toBe(300);
  });

  it('status without nowait: waits the lock timeout, then 423 lock_timeout naming the holder; nothing applied', async () => {
    const intent = await makeIntent('NORMALIZED');
    const holder = await holdRowLocks([intent.id], `bridge:reviewer-edit:${intent.id}`);
    const before = await dbFingerprint();
    const t0 = performance.now();
    const res = await api.status(intent.id, { status: 'PROCESSED' });
    const waited = performance.now() - t0;
    await holder.release();
    expect(res.status).toBe(423);
    expect(res.body.error).toMatchObject({
      code: 'lock_timeout',
      details: { intentIds: [intent.id], nowait: false, lockTimeoutMs: 300, holders: [{ pid: holder.session.pid }], holderPid: holder.session.pid, locksPage: `/locks?pid=${holder.session.pid}` },
    });
    expect(res.body.error.message).toMatch(/Waited 300 ms/);
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(await dbFingerprint()).toEqual(before);
  });

  it('bulk: one held intent makes the whole bulk 423, and the other intents are not changed either', async () => {
    const intents = await Promise.all([makeIntent('PROCESSED'), makeIntent('PROCESSED'), makeIntent('PROCESSED')]);
    const holder = await holdRowLocks([intents[1].id]);
    const before = await dbFingerprint();
    const res = await api.bulk({ ids: intents.map((i) => i.id), status: 'COMPLETED' });
    await holder.release();
    expect(res.status).toBe(423);
    expect(res.body.error).toMatchObject({ code: 'lock_timeout', details: { nowait: false, lockTimeoutMs: 300 } });
    expect([...res.body.error.details.intentIds].sort()).toEqual(intents.map((i) => i.id).sort());
    expect(await dbFingerprint()).toEqual(before);
  });

  it('a correction that cannot get the row within the lock timeout: 423 lock_timeout naming the holder, nothing applied', async () => {
    const intent = await makeIntent('PROCESSED');
    const holder = await holdRowLocks([intent.id]);
    const before = await dbFingerprint();
    const res = await api.reeval(intent.id, { diff: { amount: 1 }, source: 'svc', reason: 'fix' });
    await holder.release();
    expect(res.status).toBe(423);
    expect(res.body.error).toMatchObject({ code: 'lock_timeout', details: { intentIds: [intent.id], holders: [{ pid: holder.session.pid }] } });
    expect(await dbFingerprint()).toEqual(before);
  });

  it('once the holder is gone the same requests succeed', async () => {
    const intent = await makeIntent('PROCESSED');
    const holder = await holdRowLocks([intent.id]);
    expect((await api.status(intent.id, { status: 'COMPLETED' })).status).toBe(423);
    await holder.release();
    expect((await api.status(intent.id, { status: 'COMPLETED' })).body).toMatchObject({ alreadyApplied: false, intent: { version: 3 } });
  });
});

describe('a stale expectedVersion is a conflict, whatever the intent became', () => {
  it('a correction from version 2 of an intent completed meanwhile: 409 version_conflict and a conflict event', async () => {
    // The reviewer opened the intent at version 2 (PROCESSED); an operator completed it (version 3).
    const intent = await makeIntent('PROCESSED');
    await updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester);
    const res = await api.reeval(intent.id, { diff: { amount: 1 }, source: 'ui', reason: 'review', expectedVersion: 2 });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'version_conflict', details: { intentId: intent.id, expectedVersion: 2, currentVersion: 3 } });
    expect(await getIntentConflicts(intent.id)).toEqual([expect.objectContaining({ operation: 'reevaluate', expectedVersion: 2, currentVersion: 3 })]);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'COMPLETED', version: 3 });
  });

  it('with the current version, the same correction of a completed intent is 409 invalid_transition and no conflict event', async () => {
    const intent = await makeIntent('COMPLETED');
    const res = await api.reeval(intent.id, { diff: { amount: 1 }, source: 'ui', reason: 'review', expectedVersion: 3 });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('invalid_transition');
    expect(await getIntentConflicts(intent.id)).toEqual([]);
  });

  it('a status change from a stale version that would also be invalid now: 409 version_conflict (the reviewer must see what changed)', async () => {
    const intent = await makeIntent('PROCESSED');
    await updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester);
    const res = await api.status(intent.id, { status: 'FAILED', expectedVersion: 2 });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('version_conflict');
    expect(await getIntentConflicts(intent.id)).toHaveLength(1);
  });
});
