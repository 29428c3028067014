import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { env, type LockStrategy } from '@/lib/env';
import { updateIntentStatus } from '@/lib/intents/commands';
import { InvalidTransitionError, LockTimeoutError } from '@/lib/intents/errors';
import { NotFoundError, ValidationError } from '@/lib/shared/errors';
import { getIntentAudit } from '@/lib/intents/queries';
import type { IntentStatus } from '@/lib/shared/intent-states';
import { dbFingerprint, holdRowLocks, persistedOutcomes, resetEngine, session, settle, started, waitForWaiters, clearOutcomes } from '../barriers';
import { intentRow, makeIntent, tester } from '../helpers';

/**
 * Status updates (pessimistic: SELECT … FOR UPDATE, validate, update, audit). Cases:
 * the whole transition table through the engine, concurrent updates ordered by a held row lock, N identical
 * concurrent transitions, NOWAIT and lock timeouts naming the holder.
 */
beforeEach(resetEngine);

// The documented state machine, written out again here rather than imported: the engine must agree with the documentation, not with itself.
const ALLOWED: Record<IntentStatus, IntentStatus[]> = {
  RECEIVED: ['NORMALIZED', 'FAILED'],
  NORMALIZED: ['PROCESSED', 'FAILED'],
  PROCESSED: ['CORRECTED', 'COMPLETED', 'FAILED'],
  CORRECTED: ['COMPLETED', 'FAILED'],
  FAILED: ['RECEIVED'],
  COMPLETED: [],
};
const STATUSES = Object.keys(ALLOWED) as IntentStatus[];
/** Every strategy a status update can be configured with: the cases that hold for all run under each. */
const STRATEGIES: LockStrategy[] = ['pessimistic', 'optimistic', 'adaptive'];
const TABLE = STATUSES.flatMap((from) => STATUSES.map((to) => ({ from, to, kind: from === to ? 'same' : ALLOWED[from].includes(to) ? 'allowed' : 'refused' })));

async function auditCount(id: string): Promise<number> {
  return (await getIntentAudit(id)).length;
}

describe('the whole transition table through the engine (36 pairs)', () => {
  it.each(TABLE)('$from → $to: $kind', async ({ from, to, kind }) => {
    const intent = await makeIntent(from);
    const before = await auditCount(intent.id);
    if (kind === 'refused') {
      const err = await updateIntentStatus({ id: intent.id, status: to }, tester).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidTransitionError);
      expect(err.httpStatus).toBe(409);
      expect(err.details).toMatchObject({ intentId: intent.id, from, to, allowed: ALLOWED[from] });
      expect(await intentRow(intent.id)).toMatchObject({ status: from, version: intent.version });
      // Nothing moved, but the refusal is on record like a change would be.
      const audit = await getIntentAudit(intent.id);
      expect(audit).toHaveLength(before + 1);
      expect(audit.at(-1)).toMatchObject({ action: 'status_change_refused', actor: tester.name, fromStatus: null, toStatus: null, versionAfter: null, details: { from, to, version: intent.version } });
      return;
    }
    const result = await updateIntentStatus({ id: intent.id, status: to }, tester);
    if (kind === 'same') {
      // Already in the target state: success, says so, changes nothing.
      expect(result.alreadyApplied).toBe(true);
      expect(result.intent).toMatchObject({ status: from, version: intent.version });
      expect(await auditCount(intent.id)).toBe(before);
      return;
    }
    expect(result.alreadyApplied).toBe(false);
    expect(result.intent).toMatchObject({ status: to, version: intent.version + 1 });
    expect(await intentRow(intent.id)).toMatchObject({ status: to, version: intent.version + 1 });
    const audit = await getIntentAudit(intent.id);
    expect(audit).toHaveLength(before + 1);
    expect(audit.at(-1)).toMatchObject({ action: 'status_change', actor: tester.name, fromStatus: from, toStatus: to, versionBefore: intent.version, versionAfter: intent.version + 1 });
  });
});

describe.each(STRATEGIES)('status updates under the %s strategy', (strategy) => {
  it('walks the happy path RECEIVED → NORMALIZED → PROCESSED → COMPLETED, one version per step', async () => {
    const intent = await makeIntent('RECEIVED');
    for (const [i, status] of (['NORMALIZED', 'PROCESSED', 'COMPLETED'] as const).entries()) {
      const { intent: updated } = await updateIntentStatus({ id: intent.id, status }, tester, { strategy });
      expect(updated).toMatchObject({ status, version: i + 1 });
    }
    expect((await getIntentAudit(intent.id)).map((e) => e.toStatus)).toEqual(['RECEIVED', 'NORMALIZED', 'PROCESSED', 'COMPLETED']);
  });

  it('an operator retry FAILED → RECEIVED, then the intent moves on again', async () => {
    const intent = await makeIntent('FAILED');
    expect((await updateIntentStatus({ id: intent.id, status: 'RECEIVED' }, tester, { strategy })).intent).toMatchObject({ status: 'RECEIVED', version: 2 });
    expect((await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester, { strategy })).intent).toMatchObject({ status: 'NORMALIZED', version: 3 });
  });

  it('COMPLETED refuses every other status and stays at its version', async () => {
    const intent = await makeIntent('COMPLETED');
    for (const status of ['RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED', 'FAILED'] as const) {
      const err = await updateIntentStatus({ id: intent.id, status }, tester, { strategy }).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidTransitionError);
      expect(err.message).toMatch(/COMPLETED is terminal/);
    }
    expect(await intentRow(intent.id)).toMatchObject({ status: 'COMPLETED', version: intent.version });
  });

  it('an unknown intent is a 404; a malformed id or status is a 400 naming the field; nothing is written', async () => {
    await makeIntent();
    const before = await dbFingerprint();
    const missing = await updateIntentStatus({ id: '00000000-0000-4000-8000-000000000000', status: 'NORMALIZED' }, tester, { strategy }).catch((e) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.httpStatus).toBe(404);
    const badId = await updateIntentStatus({ id: 'nope', status: 'NORMALIZED' }, tester, { strategy }).catch((e) => e);
    expect(badId).toBeInstanceOf(ValidationError);
    expect(badId.issues).toEqual([{ field: 'id', message: 'must be a UUID' }]);
    const badStatus = await updateIntentStatus({ id: '00000000-0000-4000-8000-000000000000', status: 'DONE' as IntentStatus }, tester, { strategy }).catch((e) => e);
    expect(badStatus.issues.map((i: { field: string }) => i.field)).toEqual(['status']);
    expect(await dbFingerprint()).toEqual(before);
  });
});

describe('concurrent status updates', () => {
  // Behind a held row one status update of an intent waits from this process; a second is refused at once
  // (docs/LOCKING.md, "Waiting on a held row"), and once the row is free it is judged on the state it then finds.
  it('two different updates behind a held row: the first waits and applies, the second is refused at once, then judged on the new state', async () => {
    const intent = await makeIntent('RECEIVED');
    const holder = await holdRowLocks([intent.id]);
    const toNormalized = settle(updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester));
    await waitForWaiters(1, { application: `bridge:update_status:${intent.id}` });
    const refused = await updateIntentStatus({ id: intent.id, status: 'PROCESSED' }, tester).catch((e) => e);
    expect(refused).toBeInstanceOf(LockTimeoutError);
    expect(refused.details).toMatchObject({ intentIds: [intent.id], refusedWithoutWaiting: true, holders: [expect.objectContaining({ pid: holder.session.pid })] });
    await holder.release();
    // RECEIVED → NORMALIZED, then NORMALIZED → PROCESSED: both valid in this order.
    expect(await toNormalized).toMatchObject({ ok: true, value: { alreadyApplied: false, intent: { status: 'NORMALIZED', version: 1 } } });
    expect(await updateIntentStatus({ id: intent.id, status: 'PROCESSED' }, tester)).toMatchObject({ alreadyApplied: false, intent: { status: 'PROCESSED', version: 2 } });
  });

  it('in the other order the waiting one is refused as a transition: RECEIVED → PROCESSED is invalid, then NORMALIZED applies', async () => {
    const intent = await makeIntent('RECEIVED');
    const holder = await holdRowLocks([intent.id]);
    const toProcessed = settle(updateIntentStatus({ id: intent.id, status: 'PROCESSED' }, tester));
    await waitForWaiters(1, { application: `bridge:update_status:${intent.id}` });
    await holder.release();
    const refused = await toProcessed;
    expect(refused.ok).toBe(false);
    expect((refused as { error: unknown }).error).toBeInstanceOf(InvalidTransitionError);
    expect(await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester)).toMatchObject({ intent: { status: 'NORMALIZED', version: 1 } });
  });

  it('100 intents updated concurrently: every update commits exactly once', async () => {
    const intents = await Promise.all(Array.from({ length: 100 }, () => makeIntent('RECEIVED')));
    const results = await Promise.all(intents.map((i) => updateIntentStatus({ id: i.id, status: 'NORMALIZED' }, tester)));
    expect(results.every((r) => !r.alreadyApplied && r.intent.version === 1 && r.intent.status === 'NORMALIZED')).toBe(true);
    const rows = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM audit_events WHERE action = 'status_change'`;
    expect(Number(rows[0].n)).toBe(100);
  });
});

describe('N identical concurrent transitions: all succeed, exactly one version increment', () => {
  const N = 20;

  it.each(STRATEGIES)('%s strategy, behind a held lock: one waits and applies, the rest are refused at once and then already applied', async (strategy) => {
    const intent = await makeIntent('PROCESSED');
    await clearOutcomes();
    const holder = await holdRowLocks([intent.id]);
    const first = settle(updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester, { strategy }));
    // Pessimistic and adaptive ones wait on the row lock, an optimistic one at its write after reading version 2.
    await waitForWaiters(1, { application: `bridge:update_status:${intent.id}` });
    const refused = await Promise.all(Array.from({ length: N - 1 }, () => settle(updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester, { strategy }))));
    expect(refused.every((r) => !r.ok && r.error instanceof LockTimeoutError && (r.error.details as { refusedWithoutWaiting?: boolean }).refusedWithoutWaiting)).toBe(true);
    await holder.release();
    const waited = await first;
    const again = await Promise.all(Array.from({ length: N - 1 }, () => settle(updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester, { strategy }))));
    const results = [waited, ...again];
    expect(results.every((r) => r.ok)).toBe(true);
    const values = results.map((r) => (r as { value: { alreadyApplied: boolean; intent: { version: number; status: string } } }).value);
    expect(values.filter((v) => !v.alreadyApplied)).toHaveLength(1);
    expect(values.every((v) => v.intent.status === 'COMPLETED' && v.intent.version === 3)).toBe(true);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'COMPLETED', version: 3 });
    const audit = await getIntentAudit(intent.id);
    expect(audit.filter((e) => e.toStatus === 'COMPLETED')).toHaveLength(1);
    const counts = await persistedOutcomes();
    expect(counts['update_status/success/PROCESSED->COMPLETED']).toBe(1);
    expect(counts['update_status/already_applied']).toBe(N - 1);
    expect(counts['update_status/lock_timeout']).toBe(N - 1);
  });

  it.each(STRATEGIES)('with the expectedVersion every caller read (%s): the losers are already applied, not conflicts', async (strategy) => {
    const intent = await makeIntent('NORMALIZED');
    const holder = await holdRowLocks([intent.id]);
    const first = settle(updateIntentStatus({ id: intent.id, status: 'PROCESSED', expectedVersion: 1 }, tester, { strategy }));
    await waitForWaiters(1, { application: `bridge:update_status:${intent.id}` });
    await holder.release();
    const waited = await first;
    const results = [waited, ...(await Promise.all(Array.from({ length: 7 }, () => settle(updateIntentStatus({ id: intent.id, status: 'PROCESSED', expectedVersion: 1 }, tester, { strategy })))))];
    expect(results.every((r) => r.ok)).toBe(true);
    expect(results.filter((r) => r.ok && !r.value.alreadyApplied)).toHaveLength(1);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: 2 });
    const conflicts = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM conflict_events`;
    expect(Number(conflicts[0].n)).toBe(0);
  });

  it.each(STRATEGIES)('without any forcing (%s): 30 identical calls racing freely still give one increment', async (strategy) => {
    const intent = await makeIntent('RECEIVED');
    const results = await Promise.all(Array.from({ length: 30 }, () => updateIntentStatus({ id: intent.id, status: 'FAILED' }, tester, { strategy })));
    expect(results.filter((r) => !r.alreadyApplied)).toHaveLength(1);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'FAILED', version: 1 });
  });
});

describe('NOWAIT and lock timeouts', () => {
  it('NOWAIT against a held row lock fails at once with a lock timeout naming the labelled holder; nothing applied', async () => {
    const intent = await makeIntent('NORMALIZED');
    const holder = await holdRowLocks([intent.id], `bridge:pipeline_execute:${intent.id}`);
    const before = await dbFingerprint();
    const t0 = performance.now();
    const err = await updateIntentStatus({ id: intent.id, status: 'PROCESSED', nowait: true }, tester).catch((e) => e);
    const elapsed = performance.now() - t0;
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect(err.httpStatus).toBe(423);
    expect(err.code).toBe('lock_timeout');
    expect(err.details).toMatchObject({ intentIds: [intent.id], nowait: true });
    expect(err.details.holders).toEqual([expect.objectContaining({ pid: holder.session.pid, applicationName: `bridge:pipeline_execute:${intent.id}` })]);
    expect(err.message).toContain(`backend ${holder.session.pid}`);
    // Fail fast: it did not wait out the lock timeout a waiting command would.
    expect(elapsed).toBeLessThan(env().LOCK_TIMEOUT_MS);
    expect(await dbFingerprint()).toEqual(before);
    await holder.release();
    expect((await updateIntentStatus({ id: intent.id, status: 'PROCESSED', nowait: true }, tester)).intent.version).toBe(2);
  });

  it('an unlabelled holder (someone’s psql) is named too, found from the row: pid, application, state, transaction age', async () => {
    const intent = await makeIntent('NORMALIZED');
    const holder = await holdRowLocks([intent.id], 'psql');
    const err = await updateIntentStatus({ id: intent.id, status: 'PROCESSED', nowait: true }, tester).catch((e) => e);
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect(err.details.holders).toEqual([
      expect.objectContaining({ pid: holder.session.pid, applicationName: 'psql', state: 'idle in transaction', transactionAgeMs: expect.any(Number) }),
    ]);
    expect(err.message).toContain(`backend ${holder.session.pid} (psql, idle in transaction, transaction open for`);
    await holder.release();
  });

  it('two concurrent NOWAIT executions of one intent: the one that holds the lock commits, the other fails fast', async () => {
    const intent = await makeIntent('NORMALIZED');
    // Hold the first execution inside its transaction, after it took the row lock: its audit insert waits for
    // this table lock, which conflicts with nothing else the second execution needs before its NOWAIT.
    const auditGate = await session('bridge-test:audit-gate');
    await auditGate.query('BEGIN');
    await auditGate.query('LOCK TABLE audit_events IN SHARE MODE');
    const first = started(updateIntentStatus({ id: intent.id, status: 'PROCESSED', nowait: true }, tester));
    await waitForWaiters(1, { application: `bridge:update_status:${intent.id}` });
    const second = await updateIntentStatus({ id: intent.id, status: 'FAILED', nowait: true }, tester).catch((e) => e);
    expect(second).toBeInstanceOf(LockTimeoutError);
    // The holder is the first execution itself, recognised by its label.
    expect(second.details.holders).toEqual([expect.objectContaining({ applicationName: `bridge:update_status:${intent.id}` })]);
    await auditGate.query('COMMIT');
    expect(await first).toMatchObject({ alreadyApplied: false, intent: { status: 'PROCESSED', version: 2 } });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: 2 });
  });

  it('a lock wait longer than the lock timeout (options.lockTimeoutMs) becomes a LockTimeoutError; the change is not applied', async () => {
    const intent = await makeIntent('NORMALIZED');
    const holder = await holdRowLocks([intent.id], `bridge:test-holder:${intent.id}`);
    const t0 = performance.now();
    const err = await updateIntentStatus({ id: intent.id, status: 'PROCESSED' }, tester, { lockTimeoutMs: 150 }).catch((e) => e);
    const waited = performance.now() - t0;
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect(err.details).toMatchObject({ intentIds: [intent.id], nowait: false, lockTimeoutMs: 150 });
    expect(err.message).toMatch(/Waited 150 ms/);
    expect(err.details.holders.map((h: { pid: number }) => h.pid)).toEqual([holder.session.pid]);
    expect(waited).toBeGreaterThanOrEqual(140);
    await holder.release();
    expect(await intentRow(intent.id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
  });

  it('a lock released within the lock timeout is simply waited for', async () => {
    const intent = await makeIntent('NORMALIZED');
    const holder = await holdRowLocks([intent.id]);
    const call = updateIntentStatus({ id: intent.id, status: 'PROCESSED' }, tester, { lockTimeoutMs: 10_000 });
    await waitForWaiters(1, { application: `bridge:update_status:${intent.id}` });
    await holder.release();
    expect((await call).intent).toMatchObject({ status: 'PROCESSED', version: 2 });
  });

  it('the lock timeout is transaction-local: the pooled connection does not keep it', async () => {
    const intent = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester, { lockTimeoutMs: 1234 });
    const rows = await db().$queryRaw<{ lt: string; app: string }[]>`SELECT current_setting('lock_timeout') AS lt, current_setting('application_name') AS app`;
    expect(rows[0].lt).not.toBe('1234ms');
    expect(rows[0].app).toBe('bridge:console');
  });
});
