import { beforeEach, describe, expect, it } from 'vitest';
import { Prisma } from '@/generated/prisma/client';
import { db } from '@/lib/db/client';
import { sqlState } from '@/lib/db/sqlstate';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { VersionConflictError } from '@/lib/intents/errors';
import { CHECKS } from '@/lib/invariants/checks';
import { checkInvariants, type CheckReport } from '@/lib/invariants/run';
import { makeIntent, resetDatabase, tester } from '../helpers';

/** The checker over a database the engine wrote, then over the same database broken on purpose, one promise at a time. */

function byName(reports: CheckReport[]) {
  return Object.fromEntries(reports.map((r) => [r.name, 'violationCount' in r ? r.violationCount : -1]));
}

async function broken(): Promise<Record<string, number>> {
  const report = await checkInvariants(db());
  return Object.fromEntries(Object.entries(byName(report.checks)).filter(([, n]) => n !== 0));
}

/** Some real history: transitions, a correction, a refused stale write, an idempotent repeat. */
async function history() {
  const a = await makeIntent('PROCESSED');
  await reevaluateIntent({ id: a.id, diff: { amount: 12 }, source: 'test', reason: 'fix amount' }, tester);
  await expect(updateIntentStatus({ id: a.id, status: 'COMPLETED', expectedVersion: 0 }, tester)).rejects.toBeInstanceOf(VersionConflictError);
  await updateIntentStatus({ id: a.id, status: 'COMPLETED', idempotencyKey: 'k-1' }, tester);
  await updateIntentStatus({ id: a.id, status: 'COMPLETED', idempotencyKey: 'k-1' }, tester);
  const b = await makeIntent('FAILED');
  await updateIntentStatus({ id: b.id, status: 'RECEIVED' }, tester);
  return { a, b };
}

describe('invariant checker', () => {
  beforeEach(resetDatabase);

  it('finds nothing wrong in what the engine wrote', async () => {
    await history();
    const report = await checkInvariants(db());
    expect(report.violationCount).toBe(0);
    expect(report.checks.every((c) => 'checked' in c)).toBe(true);
    const historyCheck = report.checks.find((c) => c.name === 'history_complete');
    expect(historyCheck && 'checked' in historyCheck && historyCheck.checked).toBe(2);
  });

  it('catches a version that moved without its audit event', async () => {
    const { a } = await history();
    await db().$executeRaw`UPDATE intents SET version = version + 1 WHERE id = ${a.id}::uuid`;
    expect(await broken()).toEqual({ history_complete: 1 });
  });

  it('catches a change outside the state machine, even with a consistent history', async () => {
    const { b } = await history();
    // RECEIVED → COMPLETED, recorded as if the engine had done it.
    await db().$executeRaw`
      WITH moved AS (UPDATE intents SET status = 'COMPLETED', version = version + 1 WHERE id = ${b.id}::uuid RETURNING id, version)
      INSERT INTO audit_events (intent_id, action, actor, from_status, to_status, version_before, version_after)
      SELECT id, 'status_change', 'intruder', 'RECEIVED', 'COMPLETED', version - 1, version FROM moved`;
    expect(await broken()).toEqual({ transitions_allowed: 1 });
  });

  it('catches a correction without its row and a status change dressed as a correction', async () => {
    const { a } = await history();
    await db().$executeRaw`DELETE FROM corrections WHERE intent_id = ${a.id}::uuid`;
    const result = await broken();
    // The audit event names a correction that is gone; replayed as a plain status change PROCESSED → CORRECTED is
    // still allowed, so only the completeness check fires.
    expect(result).toEqual({ corrections_complete: 1 });
  });

  it('catches two idempotency keys claiming the same change', async () => {
    const { a } = await history();
    const [{ version }] = await db().$queryRaw<{ version: number }[]>`SELECT version FROM intents WHERE id = ${a.id}::uuid`;
    const body = JSON.stringify({ outcome: 'applied', intent: { id: a.id, version } });
    await db().$executeRaw`
      INSERT INTO idempotency_records (scope, key, operation, request_hash, state, response_status, response_body, locked_until, expires_at)
      VALUES (${tester.name}, 'k-forged', 'update_status', repeat('0', 64), 'completed', 200, ${body}::jsonb, now(), now() + interval '1 day')`;
    expect(await broken()).toEqual({ idempotency_answers_true: 1 });
  });

  it('catches an applied answer for a change that never committed', async () => {
    const { b } = await history();
    const body = JSON.stringify({ ok: true, value: { intent: { id: b.id, version: 99 }, alreadyApplied: false } });
    await db().$executeRaw`
      INSERT INTO idempotency_records (scope, key, operation, request_hash, state, response_status, response_body, locked_until, expires_at)
      VALUES (${tester.name}, 'k-lost', 'update_status', repeat('0', 64), 'completed', 200, ${body}::jsonb, now(), now() + interval '1 day')`;
    expect(await broken()).toEqual({ idempotency_answers_true: 1 });
  });

  it('catches a conflict event naming a version the intent never had', async () => {
    const { b } = await history();
    await db().$executeRaw`
      INSERT INTO conflict_events (intent_id, operation, expected_version, current_version, reason, actor)
      VALUES (${b.id}::uuid, 'update_status', 0, 50, 'forged', 'intruder')`;
    expect(await broken()).toEqual({ conflicts_consistent: 1 });
  });

  it('lists a sample but counts every violation', async () => {
    for (let i = 0; i < 25; i++) await makeIntent('RECEIVED');
    await db().$executeRaw`UPDATE intents SET version = version + 3`;
    const report = await checkInvariants(db());
    const historyCheck = report.checks.find((c) => c.name === 'history_complete')!;
    expect('violationCount' in historyCheck && historyCheck.violationCount).toBe(25);
    expect('violations' in historyCheck && historyCheck.violations).toHaveLength(20);
  });

  it('cannot write, and skips a check whose tables this database lacks', async () => {
    const writer = {
      name: 'writes',
      promise: 'tries to write',
      requires: ['intents'],
      run: async (tx: Prisma.TransactionClient) => {
        await tx.$executeRaw`UPDATE intents SET version = 0`;
        return { checked: 0, violations: [], violationCount: 0 };
      },
    };
    await makeIntent('RECEIVED');
    const refused = await checkInvariants(db(), { checks: [writer] }).catch((err: unknown) => err);
    expect(sqlState(refused)).toBe('25006');
    const report = await checkInvariants(db(), { checks: [{ ...CHECKS[0], requires: ['no_such_table'] }] });
    expect(report.checks[0]).toMatchObject({ skipped: 'no no_such_table table in this database' });
  });
});
