import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

// Configuration is read once per test file; a short lock timeout lets the API's own 423 and 503 answers be reached
// in a fraction of a second instead of the default 5 s. Set before anything reads the configuration.
const previousLockTimeout = vi.hoisted(() => {
  const previous = process.env.LOCK_TIMEOUT_MS;
  process.env.LOCK_TIMEOUT_MS = '300';
  return previous;
});

import { db } from '@/lib/db/client';
import { concurrencySettings } from '@/lib/env';
import { updateIntentStatus } from '@/lib/intents/commands';
import { getIntentConflicts } from '@/lib/intents/queries';
import { dbFingerprint, holdRowLocks, persistedOutcomes, clearOutcomes, resetEngine, session, waitForWaiters } from '../barriers';
import { intentRow, makeIntent, tester } from '../helpers';
import { api, signInApiCaller } from './route-client';

/**
 * The API under contention: lock waits that run out are 423 lock_timeout (status, bulk, corrections); a deadlock between a bulk update and a foreign transaction is retried inside the
 * request and answered 200, with the deadlock recorded; a stale expectedVersion is a conflict even when the intent
 * has meanwhile reached a state that would refuse the command anyway.
 */
beforeAll(async () => {
  await resetEngine();
  await signInApiCaller();
});
beforeEach(resetEngine);
afterAll(() => {
  if (previousLockTimeout === undefined) delete process.env.LOCK_TIMEOUT_MS;
  else process.env.LOCK_TIMEOUT_MS = previousLockTimeout;
});

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

describe('a deadlock inside a request', () => {
  it('a bulk update crossing a foreign transaction is chosen as victim, retried inside the request, and answered 200; the deadlock is recorded', async () => {
    const [x, y] = [await makeIntent('PROCESSED'), await makeIntent('PROCESSED')];
    const [first, second] = [x.id, y.id].sort(); // the bulk locks in id order
    await clearOutcomes();
    // The foreign transaction takes the bulk's second row first, and checks for deadlocks only after 10 s: when the
    // cycle closes, the bulk (100 ms) is the one that finds it and is rolled back.
    const foreign = await session('bridge-test:foreign');
    await foreign.query('BEGIN');
    await foreign.query(`SET LOCAL deadlock_timeout = '10s'`);
    await foreign.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [second]);
    const t0 = performance.now();
    const bulk = api.bulk({ ids: [first, second], status: 'FAILED' });
    let res: Awaited<typeof bulk>;
    try {
      // The bulk holds `first` and waits for `second`; now the foreign transaction asks for `first`.
      await waitForWaiters(1, { application: `bridge:bulk_update_status:${first}` });
      const foreignGetsFirst = foreign.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [first]);
      await foreignGetsFirst; // granted once the bulk was rolled back
      // The bulk's retry now queues behind the foreign transaction, which commits without changing anything.
      await waitForWaiters(1, { application: `bridge:bulk_update_status:${first}` });
      await foreign.query('COMMIT');
      res = await bulk;
    } finally {
      // Whatever happened, the foreign transaction must not outlive the test: it would block every later reset.
      await foreign.query('ROLLBACK').catch(() => undefined);
    }
    const elapsed = performance.now() - t0;
    console.log(`[measure] API bulk deadlock: detected, retried and answered in ${elapsed.toFixed(0)} ms (deadlock_timeout ${100} ms + backoff)`);
    expect(res.status).toBe(200);
    expect(res.body.intents.map((i: { status: string; version: number }) => [i.status, i.version])).toEqual([
      ['FAILED', 3],
      ['FAILED', 3],
    ]);
    const events = await db().$queryRaw<{ operation: string; intentIds: string[]; detail: string; attempt: number; retried: boolean }[]>`
      SELECT operation, intent_ids::text[] AS "intentIds", detail, attempt, retried FROM deadlock_events`;
    expect(events).toEqual([{ operation: 'bulk_update_status', intentIds: [first, second], detail: expect.stringMatching(/deadlock detected[\s\S]*Process \d+ waits for ShareLock on transaction \d+; blocked by process \d+/), attempt: 1, retried: true }]);
    expect(events[0].detail).toContain(`blocked by process ${foreign.pid}`);
    const counts = await persistedOutcomes();
    expect(counts).toMatchObject({ 'bulk_update_status/deadlock_detected': 1, 'bulk_update_status/deadlock_retried': 1 });
    expect(counts['bulk_update_status/deadlock_exhausted']).toBeUndefined();
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
