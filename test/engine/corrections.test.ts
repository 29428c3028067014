import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { db } from '@/lib/db/client';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { InvalidTransitionError, LockTimeoutError } from '@/lib/intents/errors';
import { NotFoundError, ValidationError } from '@/lib/shared/errors';
import { correctionIdFor } from '@/lib/intents/json';
import { getIntent } from '@/lib/intents/queries';
import type { IntentStatus } from '@/lib/shared/intent-states';
import { waitForCorrectionsWaiting } from '../barriers';
import { intentRow, makeIntent, rawClient, resetDatabase, tester, untyped } from '../helpers';
import { backendPid, clearOutcomes, correctionsOf, expectCompleteHistory, isBlockedBy, isWaiting, persistedOutcomes, snapshot } from '../integrity';
import { eventually } from '../wait';

/** Corrections (re-evaluations): optimistic with backoff, pessimistic fallback, deterministic correction ids. */

const held: pg.Client[] = [];
async function holder(name: string) {
  const client = await rawClient(name);
  held.push(client);
  return client;
}

beforeEach(resetDatabase);
afterEach(async () => {
  for (const c of held.splice(0)) await c.end().catch(() => undefined);
});

const correct = (id: string, diff: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  ({ id, diff, source: 'svc-a', reason: 'fix amount', ...extra }) as Parameters<typeof reevaluateIntent>[0];

describe('a single correction', () => {
  it('deep-merges the diff, moves PROCESSED to CORRECTED, stores who/why/diff and the derived id', async () => {
    const intent = await makeIntent('PROCESSED', { order: 'A-1', customer: { name: 'Ann', tier: 'gold' }, lines: [1, 2] });
    const res = await reevaluateIntent(correct(intent.id, { customer: { tier: 'silver' }, lines: [3] }, { metadata: { ticket: 'T-9' } }), tester);
    expect(res).toEqual({
      intentId: intent.id,
      status: 'CORRECTED',
      version: intent.version + 1,
      correctionId: correctionIdFor(intent.id, { customer: { tier: 'silver' }, lines: [3] }),
      correctionCount: 1,
      alreadyApplied: false,
      retries: 0,
    });
    expect((await intentRow(intent.id)).payload).toEqual({ order: 'A-1', customer: { name: 'Ann', tier: 'silver' }, lines: [3] });
    const [c] = (await getIntent(intent.id)).corrections;
    expect(c).toMatchObject({ source: 'svc-a', reason: 'fix amount', actor: tester.name, metadata: { ticket: 'T-9' }, statusBefore: 'PROCESSED', statusAfter: 'CORRECTED', versionBefore: 2, versionAfter: 3 });
    await expectCompleteHistory(intent.id);
  });

  it.each<IntentStatus>(['RECEIVED', 'NORMALIZED', 'CORRECTED'])('keeps status %s', async (status) => {
    const intent = await makeIntent(status);
    expect((await reevaluateIntent(correct(intent.id, { amount: 11 }), tester)).status).toBe(status);
  });

  it.each<IntentStatus>(['COMPLETED', 'FAILED'])('is refused on %s with 409 invalid_transition, nothing changed', async (status) => {
    const intent = await makeIntent(status);
    const before = await snapshot();
    const err = await reevaluateIntent(correct(intent.id, { amount: 11 }), tester).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidTransitionError);
    expect(err).toMatchObject({ httpStatus: 409, code: 'invalid_transition', details: { intentId: intent.id, from: status } });
    expect(await snapshot()).toEqual(before);
  });

  it('the same diff twice (keys in another order) is already applied: one correction, one increment', async () => {
    const intent = await makeIntent('PROCESSED');
    const first = await reevaluateIntent(correct(intent.id, { a: 1, b: { c: 2, d: 3 } }), tester);
    const again = await reevaluateIntent(correct(intent.id, { b: { d: 3, c: 2 }, a: 1 }, { reason: 'said twice' }), tester);
    expect(again).toMatchObject({ alreadyApplied: true, correctionId: first.correctionId, version: first.version, correctionCount: 1 });
    expect(await correctionsOf(intent.id)).toHaveLength(1);
  });

  it('setting a field back to an earlier value: applied again when the caller saw it undone, a repeat otherwise', async () => {
    const intent = await makeIntent('PROCESSED', { amount: 0 });
    const to1 = await reevaluateIntent(correct(intent.id, { amount: 1 }, { expectedVersion: intent.version }), tester);
    const to2 = await reevaluateIntent(correct(intent.id, { amount: 2 }, { expectedVersion: to1.version }), tester);
    // Without a version the caller cannot be told from a retry of the first: a repeat, nothing written.
    const blind = await reevaluateIntent(correct(intent.id, { amount: 1 }, { reason: 'no version' }), tester);
    expect(blind).toMatchObject({ alreadyApplied: true, correctionId: to1.correctionId, version: to2.version });
    // A retry of the first, from the version it was sent at: a repeat.
    const retry = await reevaluateIntent(correct(intent.id, { amount: 1 }, { expectedVersion: intent.version }), tester);
    expect(retry).toMatchObject({ alreadyApplied: true, correctionId: to1.correctionId, version: to2.version });
    // From the version after the undo: the caller saw amount 1 replaced by 2 and asks for 1 again.
    const back = await reevaluateIntent(correct(intent.id, { amount: 1 }, { expectedVersion: to2.version, reason: 'back to 1' }), tester);
    expect(back).toMatchObject({ alreadyApplied: false, version: to2.version + 1, correctionId: `${to1.correctionId}@${to2.version}`, correctionCount: 3 });
    expect((await intentRow(intent.id)).payload).toMatchObject({ amount: 1 });
    // Its own retry (the same view) is a repeat of it, and so is any request while the payload shows it.
    const backAgain = await reevaluateIntent(correct(intent.id, { amount: 1 }, { expectedVersion: to2.version }), tester);
    expect(backAgain).toMatchObject({ alreadyApplied: true, correctionId: back.correctionId, version: back.version });
    const shown = await reevaluateIntent(correct(intent.id, { amount: 1 }, { expectedVersion: back.version }), tester);
    expect(shown).toMatchObject({ alreadyApplied: true, correctionId: back.correctionId, version: back.version });
    // Undone once more and set back once more: a third row, named by its own version.
    const to2Again = await reevaluateIntent(correct(intent.id, { amount: 2 }, { expectedVersion: back.version }), tester);
    expect(to2Again).toMatchObject({ alreadyApplied: false, correctionId: `${to2.correctionId}@${back.version}` });
    const third = await reevaluateIntent(correct(intent.id, { amount: 1 }, { expectedVersion: to2Again.version }), tester);
    expect(third).toMatchObject({ alreadyApplied: false, correctionId: `${to1.correctionId}@${to2Again.version}` });
    expect(await correctionsOf(intent.id)).toHaveLength(5);
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: third.version, corrections: 5 });
  });

  it('20 concurrent requests to set a field back, all from the same view: one applies, the rest are repeats of it', async () => {
    const intent = await makeIntent('PROCESSED', { amount: 0 });
    const to1 = await reevaluateIntent(correct(intent.id, { amount: 1 }), tester);
    const to2 = await reevaluateIntent(correct(intent.id, { amount: 2 }), tester);
    const results = await Promise.all(Array.from({ length: 20 }, () => reevaluateIntent(correct(intent.id, { amount: 1 }, { expectedVersion: to2.version }), tester)));
    expect(results.filter((r) => !r.alreadyApplied)).toHaveLength(1);
    expect(new Set(results.map((r) => r.correctionId))).toEqual(new Set([`${to1.correctionId}@${to2.version}`]));
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: to2.version + 1, corrections: 3 });
  });

  it('404 for an unknown intent; 400 naming the field for bad input; nothing changed', async () => {
    const intent = await makeIntent('PROCESSED');
    const before = await snapshot();
    await expect(reevaluateIntent(correct('00000000-0000-4000-8000-000000000000', { a: 1 }), tester)).rejects.toBeInstanceOf(NotFoundError);
    const cases: [Record<string, unknown>, string][] = [
      [{ diff: {} }, 'diff'],
      [{ diff: [1] }, 'diff'],
      [{ source: '' }, 'source'],
      [{ source: undefined }, 'source'],
      [{ reason: '   ' }, 'reason'],
      [{ metadata: 'x' }, 'metadata'],
      [{ expectedVersion: -2 }, 'expectedVersion'],
      [{ idempotencyKey: '' }, 'idempotencyKey'],
      [{ id: 'not-a-uuid' }, 'id'],
    ];
    for (const [override, field] of cases) {
      const err = await reevaluateIntent(untyped({ ...correct(intent.id, { a: 1 }), ...override }), tester).catch((e: unknown) => e);
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues.map((i) => i.field)).toContain(field);
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe('concurrent corrections', () => {
  it('3 concurrent distinct corrections all succeed with a complete history', async () => {
    const intent = await makeIntent('PROCESSED');
    const results = await Promise.all(['field_a', 'field_b', 'field_c'].map((k, i) => reevaluateIntent(correct(intent.id, { [k]: `value${i}` }, { reason: `Correction ${i}` }), tester)));
    expect(results.every((r) => !r.alreadyApplied)).toBe(true);
    expect(results.map((r) => r.version).sort()).toEqual([3, 4, 5]);
    const row = await intentRow(intent.id);
    expect(row).toMatchObject({ status: 'CORRECTED', version: 5 });
    expect(row.payload).toMatchObject({ field_a: 'value0', field_b: 'value1', field_c: 'value2' });
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ corrections: 3 });
    expect((await getIntent(intent.id)).corrections.map((c) => c.versionAfter)).toEqual([3, 4, 5]);
  });

  it('50 concurrent distinct corrections of one intent: all succeed, version +50, no gaps or duplicates', async () => {
    const intent = await makeIntent('PROCESSED');
    const latencies: number[] = [];
    const started = performance.now();
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const t0 = performance.now();
        const r = await reevaluateIntent(correct(intent.id, { [`field_${i}`]: `value_${i}` }, { reason: `Correction ${i}`, source: i % 2 ? 'yuno' : 'kana' }), tester);
        latencies.push(performance.now() - t0);
        return r;
      }),
    );
    const total = performance.now() - started;
    latencies.sort((a, b) => a - b);
    console.log(
      `[measure] 50 concurrent corrections: total ${total.toFixed(0)} ms, mean ${(latencies.reduce((a, b) => a + b, 0) / 50).toFixed(0)} ms, p95 ${latencies[47].toFixed(0)} ms, max retries ${Math.max(...results.map((r) => r.retries))}`,
    );
    expect(results.filter((r) => r.alreadyApplied)).toHaveLength(0);
    expect(results.map((r) => r.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => intent.version + 1 + i));
    expect(new Set(results.map((r) => r.correctionId)).size).toBe(50);
    const row = await intentRow(intent.id);
    expect(row.version).toBe(intent.version + 50);
    for (let i = 0; i < 50; i++) expect(row.payload[`field_${i}`]).toBe(`value_${i}`);
    expect(await expectCompleteHistory(intent.id)).toEqual({ version: intent.version + 50, changes: intent.version + 50, corrections: 50 });
  });

  it('20 identical concurrent corrections: all succeed, one applies, exactly one version increment', async () => {
    const intent = await makeIntent('PROCESSED');
    const results = await Promise.all(Array.from({ length: 20 }, () => reevaluateIntent(correct(intent.id, { amount: 99 }), tester)));
    expect(results.filter((r) => !r.alreadyApplied)).toHaveLength(1);
    expect(new Set(results.map((r) => r.correctionId)).size).toBe(1);
    for (const r of results) expect(r).toMatchObject({ version: intent.version + 1, correctionCount: 1, status: 'CORRECTED' });
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: intent.version + 1, corrections: 1 });
  });

  it('8 identical pessimistic corrections behind a held lock: one waits and applies, the rest are refused at once, then already applied', async () => {
    const intent = await makeIntent('NORMALIZED');
    const h = await holder('bridge-test:holder');
    await h.query('BEGIN');
    await h.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    const first = reevaluateIntent(correct(intent.id, { amount: 5 }), tester, { strategy: 'pessimistic' });
    await waitForCorrectionsWaiting(intent.id, 1);
    // One connection of this process waiting on the row is enough (docs/LOCKING.md, "Waiting on a held row").
    const refused = await Promise.all(Array.from({ length: 7 }, () => reevaluateIntent(correct(intent.id, { amount: 5 }), tester, { strategy: 'pessimistic' }).catch((e) => e)));
    expect(refused.every((e) => e instanceof LockTimeoutError && (e.details as { refusedWithoutWaiting?: boolean }).refusedWithoutWaiting)).toBe(true);
    await h.query('COMMIT');
    const applied = await first;
    const again = await Promise.all(Array.from({ length: 7 }, () => reevaluateIntent(correct(intent.id, { amount: 5 }), tester, { strategy: 'pessimistic' })));
    const results = [applied, ...again];
    expect(results.map((r) => r.alreadyApplied).sort()).toEqual([false, ...Array<boolean>(7).fill(true)]);
    expect(results.every((r) => r.retries === 0)).toBe(true);
    expect(await expectCompleteHistory(intent.id)).toMatchObject({ version: intent.version + 1, corrections: 1 });
  });
});

/**
 * Forces every optimistic attempt of one correction to go stale, deterministically: each attempt reads the intent,
 * then waits on a lock we hold on the corrections table; while it waits another operator moves the intent on (a
 * real status change, so the history stays whole); the next gate is queued behind the attempt so it takes the table
 * the moment that attempt's transaction ends, before the retry comes round.
 */
async function staleEveryOptimisticAttempt(intentId: string, moves: IntentStatus[], beforeLastRelease?: () => Promise<void>) {
  const gates = await Promise.all(moves.map((_, k) => holder(`bridge-test:gate-${k}`)));
  const pids = await Promise.all(gates.map(backendPid));
  await gates[0].query('BEGIN');
  await gates[0].query('LOCK TABLE corrections IN ACCESS EXCLUSIVE MODE');
  const label = `bridge:reevaluate:${intentId}`;
  return async function drive() {
    let queued: Promise<unknown> | undefined;
    for (let k = 0; k < moves.length; k++) {
      await eventually(`attempt ${k + 1} waits on gate ${k}`, () => isBlockedBy(label, pids[k]));
      await updateIntentStatus({ id: intentId, status: moves[k] }, { name: 'other-operator' });
      if (k + 1 < moves.length) {
        await gates[k + 1].query('BEGIN');
        queued = gates[k + 1].query('LOCK TABLE corrections IN ACCESS EXCLUSIVE MODE');
        await eventually(`gate ${k + 1} queued`, () => isWaiting(pids[k + 1]));
      } else {
        await beforeLastRelease?.();
      }
      await gates[k].query('COMMIT');
      await queued;
    }
  };
}

describe('optimistic retries and the pessimistic fallback', () => {
  it('three stale optimistic attempts (forced) then the pessimistic attempt applies it: retries 3, history whole', async () => {
    const intent = await makeIntent('RECEIVED');
    await clearOutcomes();
    const drive = await staleEveryOptimisticAttempt(intent.id, ['NORMALIZED', 'PROCESSED', 'CORRECTED']);
    const started = performance.now();
    const running = reevaluateIntent(correct(intent.id, { amount: 12 }), tester, { strategy: 'optimistic', lockTimeoutMs: 10_000 });
    await drive();
    const res = await running;
    console.log(`[measure] forced pessimistic fallback after 3 stale attempts: ${(performance.now() - started).toFixed(0)} ms`);
    expect(res).toMatchObject({ alreadyApplied: false, retries: 3, status: 'CORRECTED', version: 4, correctionCount: 1 });
    const [c] = await correctionsOf(intent.id);
    expect(c).toMatchObject({ versionBefore: 3, versionAfter: 4, statusBefore: 'CORRECTED' });
    expect(await expectCompleteHistory(intent.id)).toEqual({ version: 4, changes: 4, corrections: 1 });
    const outcomes = await persistedOutcomes();
    expect(outcomes).toMatchObject({ 'reevaluate version_conflict': 3, 'reevaluate retry': 3, 'reevaluate pessimistic_fallback': 1, 'reevaluate success CORRECTED->CORRECTED': 1 });
    const [{ n }] = await db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM deadlock_events`;
    expect(n).toBe(0);
  });

  it('when the locked fallback also times out: 423 lock_timeout naming the holder, nothing applied', async () => {
    const intent = await makeIntent('RECEIVED');
    const rowHolder = await holder('bridge-test:row-holder');
    const drive = await staleEveryOptimisticAttempt(intent.id, ['NORMALIZED', 'PROCESSED', 'CORRECTED'], async () => {
      // After the last move committed, someone keeps the row locked: the fallback's FOR UPDATE will wait in vain.
      await rowHolder.query('BEGIN');
      await rowHolder.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    });
    const running = reevaluateIntent(correct(intent.id, { amount: 12 }), tester, { strategy: 'optimistic', lockTimeoutMs: 1000 }).catch((e: unknown) => e);
    await drive();
    const err = await running;
    await rowHolder.query('ROLLBACK');
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect(err).toMatchObject({ httpStatus: 423, code: 'lock_timeout', details: { intentIds: [intent.id], nowait: false, lockTimeoutMs: 1000 } });
    expect((err as LockTimeoutError).details).toMatchObject({ holders: [expect.objectContaining({ applicationName: 'bridge-test:row-holder' })] });
    expect(await correctionsOf(intent.id)).toHaveLength(0);
    expect(await expectCompleteHistory(intent.id)).toEqual({ version: 3, changes: 3, corrections: 0 });
  });

  it('a pessimistic correction waiting past its lock timeout: 423 lock_timeout as for a status update, nothing applied', async () => {
    const intent = await makeIntent('PROCESSED');
    const h = await holder('bridge-test:holder');
    await h.query('BEGIN');
    await h.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    const err = await reevaluateIntent(correct(intent.id, { amount: 1 }), tester, { strategy: 'pessimistic', lockTimeoutMs: 100 }).catch((e: unknown) => e);
    await h.query('ROLLBACK');
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect(err).toMatchObject({ httpStatus: 423, code: 'lock_timeout', details: { intentIds: [intent.id], lockTimeoutMs: 100, holders: [expect.objectContaining({ applicationName: 'bridge-test:holder' })] } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: intent.version });
  });
});
