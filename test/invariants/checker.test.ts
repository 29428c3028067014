import { beforeEach, describe, expect, it } from 'vitest';
import { Prisma } from '@/generated/prisma/client';
import { db } from '@/lib/db/client';
import { sqlState } from '@/lib/db/sqlstate';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { VersionConflictError } from '@/lib/intents/errors';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { CHECKS } from '@/lib/invariants/checks';
import { checkInvariants, type CheckReport } from '@/lib/invariants/run';
import { PostgresLeases } from '@/lib/leases/postgres';
import { answerWait } from '@/lib/pipeline/waits';
import { runPipeline } from '@/lib/pipeline/run';
import { makeIntent, resetDatabase, tester } from '../helpers';

/** The checker over a database the engine wrote, then over the same database broken on purpose, one promise at a time. */

function byName(reports: CheckReport[]) {
  return Object.fromEntries(reports.map((r) => [r.name, 'violationCount' in r ? r.violationCount : -1]));
}

async function broken(): Promise<Record<string, number>> {
  // The counts this process buffered are written first, so the counters the check reads are all of them.
  await flushOutcomes();
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

function outcomeOf(report: Awaited<ReturnType<typeof checkInvariants>>, name: string) {
  const found = report.checks.find((c) => c.name === name);
  if (!found || !('checked' in found)) throw new Error(`${name} did not run`);
  return found;
}

describe('invariant checker', () => {
  beforeEach(async () => {
    // Counts still buffered from the previous test must land before the reset, not in this test's tables.
    await flushOutcomes();
    await resetDatabase();
  });

  it('finds nothing wrong in what the engine wrote', async () => {
    await history();
    await flushOutcomes();
    const report = await checkInvariants(db());
    expect(report.violationCount).toBe(0);
    expect(report.checks.every((c) => 'checked' in c)).toBe(true);
    expect(outcomeOf(report, 'history_complete').checked).toBe(2);
    // Nothing was killed: every counter equals its events, and every change has its outbox event.
    expect(outcomeOf(report, 'counters_within_events').note).toBe('counters equal their events');
    expect(outcomeOf(report, 'outbox_complete').checked).toBeGreaterThan(5);
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
    // still allowed, so the transition check holds. The correction's counter and its outbox event have lost the
    // record behind them too.
    expect(result).toEqual({ corrections_complete: 1, counters_within_events: 1, outbox_complete: 1 });
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

  it('catches a pipeline step that ran again after it had completed in the same round', async () => {
    const intent = await makeIntent('RECEIVED');
    const { run } = await runPipeline({ id: intent.id }, tester);
    expect(run.status).toBe('succeeded');
    expect(await broken()).toEqual({});
    // A second run of the input bridge in the same round, as a run that ignored the recorded result would leave.
    await db().$executeRaw`
      INSERT INTO pipeline_steps (run_id, intent_id, round, position, bridge, status, finished_at, error)
      VALUES (${run.id}::uuid, ${intent.id}::uuid, ${run.round}, 0, 'input', 'failed', now(), 'ran twice')`;
    expect(await broken()).toEqual({ pipeline_steps_once: 1 });
  });

  it('catches a wait whose decision was resumed twice', async () => {
    const intent = await makeIntent('RECEIVED');
    const { run, wait } = await runPipeline({ id: intent.id }, tester, { bridges: ['input', 'normalize', 'approval', 'feedback', 'output'] });
    expect(run.status).toBe('waiting');
    await answerWait({ id: intent.id, name: 'approval', body: { approved: true } }, tester);
    const resumed = await runPipeline({ id: intent.id }, tester, { bridges: ['input', 'normalize', 'approval', 'feedback', 'output'] });
    expect(resumed.intent.status).toBe('COMPLETED');
    expect(await broken()).toEqual({});
    // A second resume of the same decision, as a run that took the answer again without the once-only mark would leave.
    await db().$executeRaw`
      INSERT INTO audit_events (intent_id, action, actor, details)
      VALUES (${intent.id}::uuid, 'wait_resumed', 'intruder', jsonb_build_object('waitId', ${wait!.id}::text, 'name', 'approval'))`;
    expect(await broken()).toEqual({ waits_decided_once: 1 });
  });

  it('catches a fenced write accepted after a higher token of its lease was granted', async () => {
    const leases = new PostgresLeases();
    const a = await makeIntent('RECEIVED');
    const first = await leases.acquire('invariants-lease', 'holder-1', 60_000);
    if (!first.acquired) throw new Error('not acquired');
    await updateIntentStatus({ id: a.id, status: 'NORMALIZED', fencing: { resource: 'invariants-lease', token: first.token } }, tester);
    await leases.release('invariants-lease', 'holder-1', first.token);
    const second = await leases.acquire('invariants-lease', 'holder-2', 60_000);
    if (!second.acquired) throw new Error('not acquired');
    await updateIntentStatus({ id: a.id, status: 'PROCESSED', fencing: { resource: 'invariants-lease', token: second.token } }, tester);
    expect(await broken()).toEqual({});
    // The fence goes back (restored from an old backup, say): the first holder's late write now gets through.
    await db().$executeRaw`UPDATE lease_fences SET token = ${first.token} WHERE resource = 'invariants-lease'`;
    await updateIntentStatus({ id: a.id, status: 'COMPLETED', fencing: { resource: 'invariants-lease', token: first.token } }, tester);
    const report = await checkInvariants(db());
    const fenced = outcomeOf(report, 'fenced_writes_current');
    // Written after the grant of the higher token; the fence below a granted and a written token; one intent's
    // fenced writes going back to a lower token.
    expect(fenced.violations.map((v) => v.detail).sort()).toEqual([
      'the fence holds 1, but token 2 was granted',
      'the fence holds 1, but token 2 was written',
      'version 3 was written with token 1 of invariants-lease after version 2 had been written with token 2',
      expect.stringMatching(/^version 3 was written with token 1 of invariants-lease, after token 2 had been granted \(lease event \d+\)$/),
    ]);
    expect(report.violationCount).toBe(4);
  });

  it('catches status counts that differ from the intents table', async () => {
    await history();
    await db().$executeRaw`INSERT INTO intent_status_deltas (is_replay, status, n) VALUES (false, 'RECEIVED', 1)`;
    expect(await broken()).toEqual({ status_counts_exact: 1 });
  });

  it('catches an outcome counter above the events behind it, and only reports one below them', async () => {
    await history();
    await flushOutcomes();
    await db().$executeRaw`DELETE FROM outcome_counts WHERE operation = 'update_status' AND outcome = 'success'`;
    const short = await checkInvariants(db());
    expect(short.violationCount).toBe(0);
    expect(outcomeOf(short, 'counters_within_events').note).toBe('counters short of their events by 5 in all');
    await db().$executeRaw`
      INSERT INTO outcome_counts (minute, operation, transition, outcome, is_replay, count)
      VALUES (date_trunc('minute', now()), 'reevaluate', '', 'success', false, 1)
      ON CONFLICT (minute, operation, transition, outcome, is_replay) DO UPDATE SET count = outcome_counts.count + 1`;
    expect(await broken()).toEqual({ counters_within_events: 1 });
  });

  it('catches an intent change without its outbox event, and one with two', async () => {
    const { a } = await history();
    await db().$executeRaw`DELETE FROM outbox_events WHERE id = (SELECT max(id) FROM outbox_events WHERE payload->>'intentId' = ${a.id})`;
    expect(await broken()).toEqual({ outbox_complete: 1 });
    await resetDatabase();
    await history();
    await db().$executeRaw`
      INSERT INTO outbox_events (subject, ordering_key, partition, payload)
      SELECT subject, ordering_key, partition, payload FROM outbox_events ORDER BY id LIMIT 1`;
    expect(await broken()).toEqual({ outbox_complete: 1 });
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
