import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { db } from '@/lib/db/client';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { IdempotencyKeyReusedError, LockTimeoutError, ReplayedError, VersionConflictError } from '@/lib/intents/errors';
import { getIntentConflicts } from '@/lib/intents/queries';
import { intentRow, makeIntent, rawClient, resetDatabase, tester } from '../helpers';
import { waitForWaiters } from '../barriers';
import { auditOf, clearOutcomes, correctionsOf, expectCompleteHistory, persistedOutcomes, settle, snapshot } from '../integrity';

/** expectedVersion conflicts (refused, recorded, nothing applied) and idempotency keys (work done once). */

const held: pg.Client[] = [];
beforeEach(resetDatabase);
afterEach(async () => {
  for (const c of held.splice(0)) await c.end().catch(() => undefined);
});

const conflictCount = async () => Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM conflict_events`)[0].n);
const idemRecords = () =>
  db().$queryRaw<{ key: string; state: string; responseStatus: number | null }[]>`
    SELECT key, state, response_status AS "responseStatus" FROM idempotency_records ORDER BY key`;
const reviewer = { name: 'reviewer-1' };

describe('stale expectedVersion', () => {
  it('status update: 409 version_conflict, a conflict event persisted, nothing applied', async () => {
    const intent = await makeIntent('NORMALIZED'); // version 1
    const auditBefore = await auditOf(intent.id);
    const err = await updateIntentStatus({ id: intent.id, status: 'PROCESSED', expectedVersion: 0 }, reviewer).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VersionConflictError);
    expect(err).toMatchObject({ httpStatus: 409, code: 'version_conflict', details: { intentId: intent.id, expectedVersion: 0, currentVersion: 1 } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
    expect(await auditOf(intent.id)).toEqual(auditBefore);
    const [event] = await getIntentConflicts(intent.id);
    expect(event).toMatchObject({ intentId: intent.id, operation: 'update_status', expectedVersion: 0, currentVersion: 1, actor: 'reviewer-1' });
    expect(event.reason).toMatch(/expected version 0/);
    expect(Date.parse(event.at)).not.toBeNaN();
  });

  it('correction: 409 version_conflict, a conflict event persisted, no correction, payload unchanged', async () => {
    const intent = await makeIntent('PROCESSED', { amount: 10 }); // version 2
    const err = await reevaluateIntent({ id: intent.id, diff: { amount: 11 }, source: 'ui', reason: 'typo', expectedVersion: 1 }, reviewer).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'version_conflict', details: { expectedVersion: 1, currentVersion: 2 } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: 2, payload: { amount: 10 } });
    expect(await correctionsOf(intent.id)).toHaveLength(0);
    expect(await getIntentConflicts(intent.id)).toMatchObject([{ operation: 'reevaluate', expectedVersion: 1, currentVersion: 2, actor: 'reviewer-1' }]);
  });

  it('a stale correction of an intent that was completed meanwhile is a version_conflict with its event, not an invalid transition', async () => {
    const intent = await makeIntent('PROCESSED'); // the reviewer opened it at version 2
    await updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester);
    const err = await reevaluateIntent({ id: intent.id, diff: { a: 1 }, source: 'ui', reason: 'late', expectedVersion: 2 }, reviewer).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VersionConflictError);
    expect(err).toMatchObject({ details: { expectedVersion: 2, currentVersion: 3 } });
    expect(await getIntentConflicts(intent.id)).toMatchObject([{ operation: 'reevaluate', expectedVersion: 2, currentVersion: 3 }]);
    // Without a version to compare, COMPLETED still refuses the correction as a transition.
    await expect(reevaluateIntent({ id: intent.id, diff: { a: 1 }, source: 'ui', reason: 'late' }, reviewer)).rejects.toMatchObject({ code: 'invalid_transition' });
  });

  it('the current version applies; a version from the future is a conflict too', async () => {
    const intent = await makeIntent('PROCESSED');
    expect((await reevaluateIntent({ id: intent.id, diff: { a: 1 }, source: 'ui', reason: 'r', expectedVersion: 2 }, reviewer)).version).toBe(3);
    await expect(updateIntentStatus({ id: intent.id, status: 'COMPLETED', expectedVersion: 7 }, reviewer)).rejects.toBeInstanceOf(VersionConflictError);
    expect((await updateIntentStatus({ id: intent.id, status: 'COMPLETED', expectedVersion: 3 }, reviewer)).intent.version).toBe(4);
  });

  it('already at the target, but from an older version than the one just before: a conflict, not "already applied"', async () => {
    const intent = await makeIntent('PROCESSED'); // v2: the PROCESSED the caller asks for was reached from v1, not v0
    await expect(updateIntentStatus({ id: intent.id, status: 'PROCESSED', expectedVersion: 0 }, reviewer)).rejects.toBeInstanceOf(VersionConflictError);
    expect(await updateIntentStatus({ id: intent.id, status: 'PROCESSED', expectedVersion: 1 }, reviewer)).toMatchObject({ alreadyApplied: true });
  });

  it('two reviewers correcting from the same version at once: exactly one applies, the other gets a conflict and it is recorded', async () => {
    const intent = await makeIntent('PROCESSED');
    const { values, errors } = await settle(
      ['x', 'y'].map((k) => reevaluateIntent({ id: intent.id, diff: { [k]: true }, source: 'ui', reason: k, expectedVersion: 2 }, { name: `reviewer-${k}` })),
    );
    expect(values).toHaveLength(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'version_conflict', details: { expectedVersion: 2, currentVersion: 3 } });
    expect(await conflictCount()).toBe(1);
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: 3, corrections: 1 });
  });
});

describe('idempotency keys', () => {
  it('a sequential repeat returns the first response (alreadyApplied false, as first answered), the work done once', async () => {
    const intent = await makeIntent('RECEIVED');
    await clearOutcomes();
    const first = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', idempotencyKey: 'k-1' }, tester);
    const again = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', idempotencyKey: 'k-1' }, tester);
    expect(again).toEqual(first);
    expect(again.alreadyApplied).toBe(false);
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: 1, changes: 1 });
    expect(await idemRecords()).toEqual([{ key: 'k-1', state: 'completed', responseStatus: 200 }]);
    expect(await persistedOutcomes()).toMatchObject({ 'update_status idempotent_replay': 1, 'update_status success RECEIVED->NORMALIZED': 1 });
  });

  it('a repeat after the intent moved on still returns the first response and changes nothing', async () => {
    const intent = await makeIntent('RECEIVED');
    const first = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', idempotencyKey: 'k-2' }, tester);
    await updateIntentStatus({ id: intent.id, status: 'PROCESSED' }, tester);
    const before = await snapshot();
    expect(await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', idempotencyKey: 'k-2' }, tester)).toEqual(first);
    expect(await snapshot()).toEqual(before);
  });

  it('8 concurrent repeats of one correction: the same response to all, one correction, one increment', async () => {
    const intent = await makeIntent('PROCESSED');
    const body = { id: intent.id, diff: { amount: 42 }, source: 'svc', reason: 'fix', idempotencyKey: 'corr-1' };
    const results = await Promise.all(Array.from({ length: 8 }, () => reevaluateIntent(body, tester)));
    for (const r of results) expect(r).toEqual(results[0]);
    expect(results[0]).toMatchObject({ alreadyApplied: false, version: 3 });
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: 3, corrections: 1 });
  });

  it('concurrent repeats while the first is held behind a row lock wait for its answer instead of doing the work', async () => {
    const intent = await makeIntent('RECEIVED');
    await clearOutcomes();
    const h = await rawClient('bridge-test:holder');
    held.push(h);
    await h.query('BEGIN');
    await h.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    const first = updateIntentStatus({ id: intent.id, status: 'FAILED', idempotencyKey: 'k-held' }, tester);
    await waitForWaiters(1);
    expect(await idemRecords()).toEqual([{ key: 'k-held', state: 'in_progress', responseStatus: null }]);
    const repeats = Array.from({ length: 5 }, () => updateIntentStatus({ id: intent.id, status: 'FAILED', idempotencyKey: 'k-held' }, tester));
    await h.query('COMMIT');
    const all = await Promise.all([first, ...repeats]);
    for (const r of all) expect(r).toEqual(JSON.parse(JSON.stringify(await first)));
    expect(all.every((r) => !r.alreadyApplied)).toBe(true);
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: 1, changes: 1 });
    const outcomes = await persistedOutcomes();
    expect(outcomes['update_status idempotent_replay']).toBe(5);
    expect(outcomes['update_status already_applied']).toBeUndefined();
  });

  it('the same key with another body: 422 idempotency_key_reused, nothing changed', async () => {
    const intent = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', idempotencyKey: 'k-3' }, tester);
    const before = await snapshot();
    for (const other of [
      () => updateIntentStatus({ id: intent.id, status: 'FAILED', idempotencyKey: 'k-3' }, tester),
      () => updateIntentStatus({ id: intent.id, status: 'NORMALIZED', expectedVersion: 0, idempotencyKey: 'k-3' }, tester),
      () => reevaluateIntent({ id: intent.id, diff: { a: 1 }, source: 's', reason: 'r', idempotencyKey: 'k-3' }, tester),
    ]) {
      const err = await other().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(IdempotencyKeyReusedError);
      expect(err).toMatchObject({ httpStatus: 422, code: 'idempotency_key_reused', details: { idempotencyKey: 'k-3' } });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('a conflict is replayed as the same 409, concurrently too, with one conflict event', async () => {
    const intent = await makeIntent('NORMALIZED');
    const body = { id: intent.id, diff: { a: 1 }, source: 'ui', reason: 'r', expectedVersion: 0, idempotencyKey: 'k-conflict' };
    const { values, errors } = await settle(Array.from({ length: 6 }, () => reevaluateIntent(body, reviewer)));
    expect(values).toHaveLength(0);
    const bodies = errors.map((e) => (e as VersionConflictError).toBody());
    for (const b of bodies) expect(b).toEqual(bodies[0]);
    expect(bodies[0]).toMatchObject({ code: 'version_conflict', details: { expectedVersion: 0, currentVersion: 1 } });
    expect(errors.filter((e) => e instanceof ReplayedError)).toHaveLength(5);
    for (const e of errors) expect(e).toMatchObject({ httpStatus: 409 });
    expect(await conflictCount()).toBe(1);
    expect(await idemRecords()).toEqual([{ key: 'k-conflict', state: 'completed', responseStatus: 409 }]);
  });

  it('an invalid transition is a stored answer: the repeat gets the same 409 invalid_transition', async () => {
    const intent = await makeIntent('COMPLETED');
    const first = (await updateIntentStatus({ id: intent.id, status: 'FAILED', idempotencyKey: 'k-inv' }, tester).catch((e: unknown) => e)) as ReplayedError;
    const again = (await updateIntentStatus({ id: intent.id, status: 'FAILED', idempotencyKey: 'k-inv' }, tester).catch((e: unknown) => e)) as ReplayedError;
    expect(again).toBeInstanceOf(ReplayedError);
    expect(again.toBody()).toEqual(first.toBody());
    expect(again).toMatchObject({ httpStatus: 409, code: 'invalid_transition' });
  });

  it('a lock timeout is transient: the key is freed and a later repeat does the work', async () => {
    const intent = await makeIntent('RECEIVED');
    const h = await rawClient('bridge-test:holder');
    held.push(h);
    await h.query('BEGIN');
    await h.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    const err = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', nowait: true, idempotencyKey: 'k-lock' }, tester).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect(await idemRecords()).toEqual([]);
    await h.query('COMMIT');
    const res = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', nowait: true, idempotencyKey: 'k-lock' }, tester);
    expect(res).toMatchObject({ alreadyApplied: false, intent: { version: 1 } });
  });
});

describe('outcome counts', () => {
  it('persists each outcome and the lock waits, so every console instance sees the same numbers', async () => {
    const [a, b] = await Promise.all([makeIntent('RECEIVED'), makeIntent('COMPLETED')]);
    await clearOutcomes();
    await Promise.all(Array.from({ length: 4 }, () => updateIntentStatus({ id: a.id, status: 'NORMALIZED' }, tester)));
    await updateIntentStatus({ id: a.id, status: 'PROCESSED', expectedVersion: 0 }, tester).catch(() => undefined);
    await updateIntentStatus({ id: b.id, status: 'FAILED' }, tester).catch(() => undefined);
    await updateIntentStatus({ id: '00000000-0000-4000-8000-000000000000', status: 'FAILED' }, tester).catch(() => undefined);
    const h = await rawClient('bridge-test:holder');
    held.push(h);
    await h.query('BEGIN');
    await h.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [a.id]);
    await updateIntentStatus({ id: a.id, status: 'PROCESSED', nowait: true }, tester).catch(() => undefined);
    await h.query('ROLLBACK');

    expect(await persistedOutcomes()).toEqual({
      'update_status success RECEIVED->NORMALIZED': 1,
      'update_status already_applied': 3,
      'update_status stale_expected_version': 1,
      'update_status invalid_transition': 1,
      'update_status not_found': 1,
      'update_status lock_timeout': 1,
    });
    // Every lock taken (not the NOWAIT that failed) went into the wait histogram.
    const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT sum(count) AS n FROM lock_wait_buckets WHERE operation = 'update_status'`;
    expect(Number(n)).toBe(7);
  });
});
