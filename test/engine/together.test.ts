import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { reevaluateIntent } from '@/lib/intents/commands';
import { LockTimeoutError } from '@/lib/intents/errors';
import type { JsonObject } from '@/lib/shared/json';
import { waitingTogether } from '@/lib/intents/together';
import { holdRowLocks, lockWaiters, session, settle, started, waitForCorrectionsWaiting } from '../barriers';
import { makeIntent, resetDatabase, tester } from '../helpers';
import { expectCompleteHistory } from '../integrity';

/**
 * Corrections of one intent that meet in one process go to the database together (lib/intents/together.ts): while
 * one call is at the database the others wait in the process, then go in one call and one transaction, each still
 * checked and written on its own; lock timeouts stay each caller's own.
 */
beforeEach(resetDatabase);

const correct = (id: string, diff: JsonObject) => ({ id, diff, source: 'svc-a', reason: 'together' });

describe('corrections that meet in one process', () => {
  it.each(['adaptive', 'pessimistic'] as const)('%s: one is at the database, the rest wait in the process; then they go in one transaction, in arrival order', async (strategy) => {
    const intent = await makeIntent('PROCESSED');
    // The first correction is held at the database after taking the row (its correction row waits for this table
    // lock): the row is held by this process's own call, so the others wait for it here and are not refused.
    const gate = await session('bridge-test:corrections-gate');
    await gate.query('BEGIN');
    await gate.query('LOCK TABLE corrections IN SHARE MODE');
    const calls = Array.from({ length: 5 }, (_, i) => started(reevaluateIntent(correct(intent.id, { [`field_${i}`]: i }), tester, { strategy })));
    await waitForCorrectionsWaiting(intent.id, 5);
    expect(await lockWaiters({ application: `bridge:reevaluate:${intent.id}` })).toBe(1);
    expect(waitingTogether(intent.id)).toBe(4);
    await gate.query('COMMIT');
    const results = await Promise.all(calls);
    // The first went alone; the four that waited for it went together, in the order they came.
    expect(results.map((r) => r.version)).toEqual([1, 2, 3, 4, 5].map((k) => intent.version + k));
    expect(results.map((r) => r.correctionCount)).toEqual([1, 2, 3, 4, 5]);
    const tx = await db().$queryRaw<{ version: number; txId: string }[]>`
      SELECT version_after AS version, tx_id::text AS "txId" FROM audit_events
      WHERE intent_id = ${intent.id}::uuid AND action = 'correction' ORDER BY version_after`;
    expect(new Set(tx.slice(1).map((t) => t.txId)).size).toBe(1);
    expect(tx[0].txId).not.toBe(tx[1].txId);
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: intent.version + 5, corrections: 5 });
    expect(waitingTogether(intent.id)).toBe(0);
  });

  it('behind a row held by someone else, the one at the database waits out its own lock timeout; the others are refused at once', async () => {
    const intent = await makeIntent('PROCESSED');
    const holder = await holdRowLocks([intent.id]);
    const a = settle(reevaluateIntent(correct(intent.id, { a: 1 }), tester, { strategy: 'pessimistic', lockTimeoutMs: 200 }));
    await waitForCorrectionsWaiting(intent.id, 1);
    const b = await reevaluateIntent(correct(intent.id, { b: 1 }), tester, { strategy: 'pessimistic', lockTimeoutMs: 30_000 }).catch((e) => e);
    expect(b).toBeInstanceOf(LockTimeoutError);
    expect(b.details).toMatchObject({ refusedWithoutWaiting: true, holders: [expect.objectContaining({ pid: holder.session.pid })] });
    const ra = await a;
    expect(ra.ok ? null : ra.error).toBeInstanceOf(LockTimeoutError);
    expect((ra as { error: LockTimeoutError }).error.details).toMatchObject({ lockTimeoutMs: 200 });
    await holder.release();
    expect(await reevaluateIntent(correct(intent.id, { c: 1 }), tester, { strategy: 'adaptive' })).toMatchObject({ alreadyApplied: false, version: intent.version + 1, correctionCount: 1 });
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: intent.version + 1, corrections: 1 });
  });
});
