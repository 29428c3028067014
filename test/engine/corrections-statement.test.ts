import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { reevaluateIntent } from '@/lib/intents/commands';
import { InvalidTransitionError, VersionConflictError } from '@/lib/intents/errors';
import { NotFoundError } from '@/lib/shared/errors';
import type { JsonObject } from '@/lib/shared/json';
import type { LockStrategy } from '@/lib/env';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { clearOutcomes, holdRowLocks, persistedOutcomes, started, waitForCorrectionsWaiting, waitForLockWaitOf } from '../barriers';
import { intentRow, makeIntent, resetDatabase, tester } from '../helpers';
import { expectCompleteHistory, snapshot } from '../integrity';

/**
 * A correction is one call of bridge_correct (prisma/functions) whatever the strategy: the same rows written with or
 * without an idempotency key, exact counts under concurrency, labelled backends and recorded lock waits. The cases
 * that hold for every strategy run for each (describe.each).
 */
beforeEach(resetDatabase);

const correct = (id: string, diff: JsonObject, extra: Record<string, unknown> = {}) =>
  ({ id, diff, source: 'svc-a', reason: 'fix amount', ...extra }) as Parameters<typeof reevaluateIntent>[0];

const detailsOf = async (intentId: string) => {
  const [correction] = await db().$queryRaw<Record<string, unknown>[]>`
    SELECT correction_id AS "correctionId", diff, source, reason, metadata, actor, version_before AS "versionBefore",
           version_after AS "versionAfter", status_before::text AS "statusBefore", status_after::text AS "statusAfter"
    FROM corrections WHERE intent_id = ${intentId}::uuid`;
  const [audit] = await db().$queryRaw<Record<string, unknown>[]>`
    SELECT action, actor, from_status::text AS "fromStatus", to_status::text AS "toStatus", version_before AS "versionBefore",
           version_after AS "versionAfter", details
    FROM audit_events WHERE intent_id = ${intentId}::uuid AND action = 'correction'`;
  return { correction, audit };
};

const STRATEGIES: LockStrategy[] = ['adaptive', 'optimistic', 'pessimistic'];

describe.each(STRATEGIES)('a correction under the %s strategy', (strategy) => {
  it('writes the same rows with and without an idempotency key', async () => {
    const payload = { order: 'A-1', amount: 10, lines: { a: 1 } };
    const [a, b] = await Promise.all([makeIntent('PROCESSED', payload), makeIntent('PROCESSED', payload)]);
    const diff = { amount: 12, lines: { b: 2 } };
    const metadata = { ticket: 'T-9' };
    const one = await reevaluateIntent(correct(a.id, diff, { metadata }), tester, { strategy });
    const steps = await reevaluateIntent(correct(b.id, diff, { metadata, idempotencyKey: `steps-${b.id}` }), tester, { strategy });
    expect(one).toMatchObject({ alreadyApplied: false, retries: 0, status: 'CORRECTED', version: a.version + 1, correctionCount: 1 });
    expect({ ...steps, intentId: a.id, correctionId: one.correctionId }).toEqual(one);
    const [ra, rb] = await Promise.all([intentRow(a.id), intentRow(b.id)]);
    expect(ra.payload).toEqual({ order: 'A-1', amount: 12, lines: { a: 1, b: 2 } });
    expect(ra.payload).toEqual(rb.payload);
    const [da, db_] = await Promise.all([detailsOf(a.id), detailsOf(b.id)]);
    expect(da.correction).toEqual({ ...db_.correction, correctionId: one.correctionId });
    expect(da.audit).toEqual({ ...db_.audit, details: { ...(db_.audit.details as object), correctionId: one.correctionId } });
    expect(da.audit).toMatchObject({ action: 'correction', actor: tester.name, fromStatus: 'PROCESSED', toStatus: 'CORRECTED', details: { reason: 'fix amount', source: 'svc-a' } });
    await expectCompleteHistory(a.id);
  });

  it('50 concurrent corrections of one intent: all succeed, version +50, each sees the exact count', async () => {
    const intent = await makeIntent('PROCESSED');
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => reevaluateIntent(correct(intent.id, { [`field_${i}`]: `value_${i}` }), tester, { strategy })),
    );
    expect(results.every((r) => !r.alreadyApplied)).toBe(true);
    // Only the optimistic strategy sleeps and tries again; the others queue on the row inside their one call.
    if (strategy !== 'optimistic') expect(results.every((r) => r.retries === 0)).toBe(true);
    // Under the lock the count is exact: the corrections were applied one after another, 1 … 50.
    expect(results.map((r) => r.correctionCount).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(results.map((r) => r.version).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => intent.version + i + 1));
    const row = await intentRow(intent.id);
    expect(Object.keys(row.payload as object).filter((k) => k.startsWith('field_'))).toHaveLength(50);
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: intent.version + 50, corrections: 50 });
  });

  it('behind a held row one correction waits, identical ones are refused at once, and once it applied they are already applied', async () => {
    const intent = await makeIntent('PROCESSED');
    const holder = await holdRowLocks([intent.id]);
    const first = started(reevaluateIntent(correct(intent.id, { amount: 7 }), tester, { strategy }));
    await waitForCorrectionsWaiting(intent.id, 1);
    // One connection of this process waiting on the row is enough (docs/LOCKING.md, "Waiting on a held row").
    const refused = await Promise.all(Array.from({ length: 3 }, () => reevaluateIntent(correct(intent.id, { amount: 7 }), tester, { strategy }).catch((e: unknown) => e)));
    for (const e of refused) expect(e).toMatchObject({ httpStatus: 423, details: { refusedWithoutWaiting: true } });
    await holder.release();
    const applied = await first;
    const again = await Promise.all(Array.from({ length: 3 }, () => reevaluateIntent(correct(intent.id, { amount: 7 }), tester, { strategy })));
    expect([applied, ...again].map((r) => r.alreadyApplied)).toEqual([false, true, true, true]);
    for (const r of [applied, ...again]) expect(r).toMatchObject({ status: 'CORRECTED', version: intent.version + 1, correctionCount: 1 });
  });

  it('a stale expectedVersion is refused with a conflict event, nothing applied', async () => {
    const intent = await makeIntent('PROCESSED');
    const before = await snapshot();
    const err = await reevaluateIntent(correct(intent.id, { amount: 1 }, { expectedVersion: intent.version - 1 }), tester, { strategy }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VersionConflictError);
    expect(err).toMatchObject({ httpStatus: 409, details: { intentId: intent.id, expectedVersion: intent.version - 1, currentVersion: intent.version } });
    const [conflict] = await db().$queryRaw<{ operation: string; expected: number; current: number; actor: string }[]>`
      SELECT operation, expected_version AS expected, current_version AS current, actor FROM conflict_events WHERE intent_id = ${intent.id}::uuid`;
    expect(conflict).toEqual({ operation: 'reevaluate', expected: intent.version - 1, current: intent.version, actor: tester.name });
    const after = await snapshot();
    expect({ ...after, counts: { ...after.counts, conflict_events: undefined } }).toEqual({ ...before, counts: { ...before.counts, conflict_events: undefined } });
  });

  it('refuses COMPLETED and FAILED intents and answers 404 for an unknown one, nothing applied', async () => {
    const [done, failed] = await Promise.all([makeIntent('COMPLETED'), makeIntent('FAILED')]);
    const before = await snapshot();
    for (const intent of [done, failed]) {
      const err = await reevaluateIntent(correct(intent.id, { amount: 1 }), tester, { strategy }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidTransitionError);
      expect(err).toMatchObject({ httpStatus: 409, details: { intentId: intent.id, from: intent.status } });
    }
    const missing = await reevaluateIntent(correct('00000000-0000-4000-8000-000000000000', { amount: 1 }), tester, { strategy }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(await snapshot()).toEqual(before);
  });
});

describe('a pessimistic correction', () => {
  it('labels its backend and records its lock wait while it queues behind a holder', async () => {
    const intent = await makeIntent('PROCESSED');
    await clearOutcomes();
    await db().$executeRaw`TRUNCATE lock_wait_buckets`;
    const holder = await holdRowLocks([intent.id]);
    const call = started(reevaluateIntent(correct(intent.id, { amount: 3 }), tester, { strategy: 'pessimistic' }));
    await waitForLockWaitOf(`bridge:reevaluate:${intent.id}`, 200);
    await holder.release();
    expect(await call).toMatchObject({ alreadyApplied: false, version: intent.version + 1 });
    await flushOutcomes();
    const [bucket] = await db().$queryRaw<{ n: bigint; sumMs: number }[]>`
      SELECT count AS n, sum_ms AS "sumMs" FROM lock_wait_buckets WHERE operation = 'reevaluate'`;
    expect(Number(bucket.n)).toBe(1);
    expect(bucket.sumMs).toBeGreaterThanOrEqual(190);
    expect(await persistedOutcomes()).toMatchObject({ 'reevaluate/success': 1 });
  });
});
