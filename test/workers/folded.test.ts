import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent, updateIntentStatus } from '@/lib/intents/commands';
import { CHECKS } from '@/lib/invariants/checks';
import { checkInvariants } from '@/lib/invariants/run';
import { pipelineHistory } from '@/lib/pipeline/history';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { onClient } from '@/lib/pipeline/repository';
import {
  claimDueIntents,
  closeRunsAndClaims,
  releaseClaim,
  rescueStaleClaims,
  type Claim,
  type ClaimEnd,
  type OpenOnClaim,
  type RunCloseAndClaimEnd,
} from '@/lib/workers/repository';
import { lockWaiters, resetEngine, session, started } from '../barriers';
import { tester } from '../helpers';
import { onSession } from './session-client';
import { eventually } from '../wait';

/**
 * The worker's two folded statements: the claim that opens each run and its first step, and the close that ends the
 * last step, the run and the claim at once. Each item stays all or nothing on its claim token: a rescued worker's
 * late close writes nothing for the claims it lost and everything for those it holds, and a close racing the
 * rescuer is decided by whoever commits first, in every order (real sessions, held transactions, no sleeps).
 */
beforeEach(resetEngine);
afterAll(disconnectLockDb);

const actor = 'worker:folded';
const open: OpenOnClaim = { mode: 'FAILFAST', door: 'worker', actor, bridge: 'input', accepts: ['RECEIVED'] };
const claimArgs = (workerName: string, limit = 10) => ({ workerName, limit, leaseMs: 30_000, maxAttempts: 5, open });
const newIntents = async (n: number, prefix = 'F') => {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await createIntent({ payload: { order: `${prefix}-${i}` }, source: 'test' }, tester)).id);
  return ids.sort();
};
const count = async (sql: TemplateStringsArray, ...values: unknown[]) => Number((await db().$queryRaw<{ n: bigint }[]>(sql, ...values))[0].n);
const completed: ClaimEnd = { outcome: 'completed', delayMs: 0, error: null, failError: 'attempt 1 of 5: failed' };

/** The close of a claim's one-bridge run: its step completed, the run succeeded, the claim ended as `claimEnd` says. */
function closeOf(c: Claim, claimEnd: ClaimEnd = completed): RunCloseAndClaimEnd {
  const runId = c.opened!.run.runId!;
  return {
    intentId: c.intentId,
    claimToken: c.claimToken,
    runId,
    status: 'succeeded',
    error: null,
    actor,
    stepEnd: { intentId: c.intentId, claimToken: c.claimToken, runId, stepId: c.opened!.firstStep.stepId!, bridge: 'input', status: 'completed', result: { ok: true }, error: null, actor },
    claimEnd,
  };
}

/** The claims' leases run out (by SQL) and the rescuer takes them back. */
async function rescue(lost: Claim[]): Promise<void> {
  await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE claim_token = ANY(${lost.map((c) => c.claimToken)}::bigint[])`;
  expect(await rescueStaleClaims(db(), { rescuer: 'test', limit: 100 })).toHaveLength(lost.length);
}

describe('the claim opens each run and its first step', () => {
  it('one statement: a run and a running first step per claimed intent, audited in order (run start, then step start)', async () => {
    const ids = await newIntents(3);
    const claims = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(claims.map((c) => c.intentId)).toEqual(ids);
    for (const c of claims) {
      expect(c.opened?.run).toMatchObject({ claimHeld: true, claimedBy: null, intentStatus: 'RECEIVED', round: 1, recorded: {} });
      expect(c.opened?.firstStep).toMatchObject({ stepStatus: 'running', status: 'RECEIVED', version: 0, finishedAt: null });
    }
    const rows = await db().$queryRaw<{ intentId: string; actions: string[] }[]>`
      SELECT intent_id::text AS "intentId", array_agg(action ORDER BY id) AS actions FROM audit_events
      WHERE action IN ('pipeline_started', 'bridge_started') GROUP BY intent_id ORDER BY intent_id`;
    expect(rows).toEqual(ids.map((intentId) => ({ intentId, actions: ['pipeline_started', 'bridge_started'] })));
    expect(await count`SELECT count(*) AS n FROM pipeline_runs WHERE status = 'running' AND claim_token IS NOT NULL`).toBe(3);
  });

  it('a step this round completed already is opened as replayed, with its recorded result', async () => {
    const [id] = await newIntents(1);
    const [first] = await claimDueIntents(db(), claimArgs('worker-a'));
    // The first attempt recorded the bridge's result and then its worker died: the next claim replays it.
    await db().$executeRaw`UPDATE pipeline_steps SET status = 'completed', finished_at = now(), result = '{"kept":1}' WHERE claim_token = ${first.claimToken}::bigint`;
    await rescue([first]);
    const [second] = await claimDueIntents(db(), claimArgs('worker-b'));
    expect(second.intentId).toBe(id);
    expect(second.opened?.run.recorded).toEqual({ input: { kept: 1 } });
    expect(second.opened?.firstStep.stepStatus).toBe('replayed');
    expect(await count`SELECT count(*) AS n FROM pipeline_runs WHERE intent_id = ${id}::uuid AND status = 'running'`).toBe(1);
  });

  it('a claim given back before it ran releases its opened run and step: no attempt, not in the runs, no event out', async () => {
    await newIntents(1);
    const [claim] = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(await releaseClaim(db(), { intentId: claim.intentId, claimToken: claim.claimToken, delayMs: 0, reason: 'released by a stopping worker' })).toBe(true);
    const [run] = await db().$queryRaw<{ status: string; error: string; step: string }[]>`
      SELECT r.status, r.error, s.status AS step FROM pipeline_runs r JOIN pipeline_steps s ON s.run_id = r.id`;
    expect(run).toMatchObject({ status: 'released', step: 'released' });
    expect(run.error).toContain('given back before the run started');
    const [work] = await db().$queryRaw<{ state: string; attempt: number }[]>`SELECT state, attempt FROM intent_work`;
    expect(work).toEqual({ state: 'available', attempt: 0 });
    // Audited as given back, not as a run's end: no evt.intent.pipeline_finished goes out for a run that ran nothing.
    expect(await count`SELECT count(*) AS n FROM audit_events WHERE action = 'pipeline_released'`).toBe(1);
    expect(await count`SELECT count(*) AS n FROM audit_events WHERE action = 'pipeline_finished'`).toBe(0);
    expect(await count`SELECT count(*) AS n FROM outbox_events WHERE subject = 'evt.intent.pipeline_finished'`).toBe(0);
    // The runs panel and the rerun's plan see no attempt; the next claim's run is attempt 1 of the round.
    expect((await pipelineHistory(claim.intentId)).runs).toEqual([]);
    const [next] = await claimDueIntents(db(), claimArgs('worker-b'));
    expect(next.intentId).toBe(claim.intentId);
    expect((await pipelineHistory(claim.intentId)).runs.map((r) => [r.attempt, r.status])).toEqual([[1, 'running']]);
  });
});

describe('the close: last step, run and claim in one statement', () => {
  it('a rescued worker’s late close writes nothing for the claims it lost and everything for those it holds', async () => {
    await newIntents(6);
    const claims = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(claims).toHaveLength(6);
    const lost = [1, 4];
    await rescue(lost.map((i) => claims[i]));

    const closed = await closeRunsAndClaims(onClient(db()), claims.map((c) => closeOf(c)));
    expect(closed.map((c) => c?.outcome ?? null)).toEqual(claims.map((_, i) => (lost.includes(i) ? null : 'completed')));
    expect(closed[0]!.intent.id).toBe(claims[0].intentId);

    const rows = await db().$queryRaw<{ id: string; work: string; run: string; step: string }[]>`
      SELECT w.intent_id::text AS id, w.state AS work, r.status AS run, s.status AS step
      FROM intent_work w JOIN pipeline_runs r ON r.intent_id = w.intent_id JOIN pipeline_steps s ON s.run_id = r.id ORDER BY w.intent_id`;
    expect(rows.map((r) => `${r.work}/${r.run}/${r.step}`)).toEqual(
      claims.map((_, i) => (lost.includes(i) ? 'retryable/abandoned/abandoned' : 'completed/succeeded/completed')),
    );
    // Audited once for each held claim, in order (the step's end before the run's), nothing for the lost ones.
    const audits = await db().$queryRaw<{ id: string; actions: string[] }[]>`
      SELECT intent_id::text AS id, array_agg(action ORDER BY id) AS actions FROM audit_events
      WHERE action IN ('bridge_completed', 'pipeline_finished') GROUP BY intent_id ORDER BY intent_id`;
    expect(audits).toEqual(claims.filter((_, i) => !lost.includes(i)).map((c) => ({ id: c.intentId, actions: ['bridge_completed', 'pipeline_finished'] })));
    const report = await checkInvariants(db(), { checks: CHECKS.filter((c) => c.name === 'pipeline_steps_once') });
    expect(report.violationCount).toBe(0);
  });

  it('a run that leaves its intent FAILED ends its claim as failed, whatever the worker chose', async () => {
    const [id] = await newIntents(1);
    const [claim] = await claimDueIntents(db(), claimArgs('worker-a'));
    // Failed by another door while the worker held the claim (the engine's command, unfenced).
    await updateIntentStatus({ id, status: 'FAILED', reason: 'operator' }, tester);
    const [closed] = await closeRunsAndClaims(onClient(db()), [closeOf(claim, { ...completed, failError: 'attempt 1 of 5: failed by an operator' })]);
    expect(closed?.outcome).toBe('failed');
    expect(closed?.intent.status).toBe('FAILED');
    const [work] = await db().$queryRaw<{ state: string; lastError: string }[]>`SELECT state, last_error AS "lastError" FROM intent_work`;
    expect(work).toEqual({ state: 'failed', lastError: 'attempt 1 of 5: failed by an operator' });
  });

  describe('a late close against the rescuer: whoever commits first wins, the other changes nothing', () => {
    type Op = 'close' | 'rescue';
    // [first statement, then the order of the commits]; a close that meets the rescuer's uncommitted rescue waits for it.
    const cases: { name: string; steps: (`${Op}` | `commit-${Op}`)[]; winner: Op }[] = [
      { name: 'close, commit, rescue, commit', steps: ['close', 'commit-close', 'rescue', 'commit-rescue'], winner: 'close' },
      { name: 'rescue, commit, close, commit', steps: ['rescue', 'commit-rescue', 'close', 'commit-close'], winner: 'rescue' },
      { name: 'close, rescue (skips the locked row), commit close, commit rescue', steps: ['close', 'rescue', 'commit-close', 'commit-rescue'], winner: 'close' },
      { name: 'close, rescue (skips the locked row), commit rescue, commit close', steps: ['close', 'rescue', 'commit-rescue', 'commit-close'], winner: 'close' },
      { name: 'rescue, close (waits for the rescue), commit rescue, commit close', steps: ['rescue', 'close', 'commit-rescue', 'commit-close'], winner: 'rescue' },
    ];

    it.each(cases)('$name → $winner', async ({ steps, winner }) => {
      const [id] = await newIntents(1);
      const [claim] = await claimDueIntents(db(), claimArgs('w1'));
      await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE intent_id = ${id}::uuid`;
      const worker = await session('bridge-test:closer');
      const rescuer = await session('bridge-test:rescuer');
      await worker.query('BEGIN');
      await rescuer.query('BEGIN');
      let closing: Promise<unknown[]> | undefined;
      let rescued: unknown[] | undefined;
      for (const step of steps) {
        if (step === 'close') {
          closing = started(closeRunsAndClaims(onClient(onSession(worker)), [closeOf(claim)]));
          // It either returns at once or waits for the rescuer's row lock: know which before going on.
          let settled = false;
          void closing.finally(() => (settled = true));
          await eventually('the close to wait on the lock (or finish)', async () => settled || (await lockWaiters({ pids: [worker.pid] })) > 0, { everyMs: 3 });
        } else if (step === 'rescue') {
          rescued = await rescueStaleClaims(onSession(rescuer), { rescuer: 'test', limit: 10 });
        } else if (step === 'commit-close') {
          await closing;
          await worker.query('COMMIT');
        } else {
          await rescuer.query('COMMIT');
        }
      }
      const [closed] = await closing!;
      expect({ closed: closed !== null, rescued: rescued!.length === 1 }).toEqual({ closed: winner === 'close', rescued: winner === 'rescue' });
      const [row] = await db().$queryRaw<{ work: string; run: string; step: string }[]>`
        SELECT w.state AS work, r.status AS run, s.status AS step
        FROM intent_work w JOIN pipeline_runs r ON r.intent_id = w.intent_id JOIN pipeline_steps s ON s.run_id = r.id`;
      expect(row).toEqual(winner === 'close' ? { work: 'completed', run: 'succeeded', step: 'completed' } : { work: 'retryable', run: 'abandoned', step: 'abandoned' });
      expect(await count`SELECT count(*) AS n FROM audit_events WHERE action = 'pipeline_finished'`).toBe(winner === 'close' ? 1 : 0);
      await worker.end();
      await rescuer.end();
    });
  });
});
