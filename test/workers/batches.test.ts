import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent, updateIntentStatus } from '@/lib/intents/commands';
import { LockTimeoutError } from '@/lib/intents/errors';
import { checkInvariants } from '@/lib/invariants/run';
import { CHECKS } from '@/lib/invariants/checks';
import { FencingTokenStaleError } from '@/lib/leases/errors';
import { highestAcceptedToken } from '@/lib/leases/fencing';
import { registerBridge, unregisterBridge } from '@/lib/pipeline/bridges';
import { disconnectLockDb, PIPELINE_LOCK_NAMESPACE } from '@/lib/pipeline/lock';
import { finishRuns, finishSteps, onClient, startRuns, startSteps } from '@/lib/pipeline/repository';
import { claimFence, runPipeline } from '@/lib/pipeline/run';
import type { Bridge } from '@/lib/pipeline/types';
import { claimDueIntents, rescueStaleClaims, settleClaims, type Claim } from '@/lib/workers/repository';
import { gate, resetEngine, session, started } from '../barriers';
import { tester } from '../helpers';
import { onSession } from './session-client';

/**
 * The batched statements with claims lost inside a batch (a rescued worker's late batch writes only for the claims
 * it still holds), and the execution lock between workers' claims and operators' runs in every order — in this
 * process, with time moved by SQL.
 */
let held = gate();
let entered = gate();
const holding: Bridge = {
  name: 'test-batch-hold',
  description: 'waits for the test',
  accepts: ['RECEIVED'],
  async run() {
    entered.open();
    await held.wait;
  },
};

beforeAll(() => registerBridge(holding, { replace: true }));
beforeEach(async () => {
  await resetEngine();
  held = gate();
  entered = gate();
});
afterAll(async () => {
  unregisterBridge(holding.name);
  await disconnectLockDb();
});

const exec = () => onClient(db());
const claimArgs = (workerName: string, limit = 10) => ({ workerName, limit, leaseMs: 30_000, maxAttempts: 5 });
const newIntents = async (n: number, prefix = 'B') => {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await createIntent({ payload: { order: `${prefix}-${i}` }, source: 'test' }, tester)).id);
  return ids.sort();
};
const count = async (sql: TemplateStringsArray, ...values: unknown[]) => Number((await db().$queryRaw<{ n: bigint }[]>(sql, ...values))[0].n);
const workStates = async () =>
  Object.fromEntries((await db().$queryRaw<{ id: string; state: string }[]>`SELECT intent_id::text AS id, state FROM intent_work`).map((r) => [r.id, r.state]));

/** Worker A's claims lose their lease (by SQL) and are rescued: `lost` are no longer A's. */
async function rescue(lost: Claim[]): Promise<void> {
  await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE claim_token = ANY(${lost.map((c) => c.claimToken)}::bigint[])`;
  expect(await rescueStaleClaims(db(), { rescuer: 'test', limit: 100 })).toHaveLength(lost.length);
}

describe('a rescued worker’s late batch writes only for the claims it still holds', () => {
  it('run starts, step starts and ends, run ends and claim ends: each batch writes the held claims and nothing for the lost ones', async () => {
    await newIntents(6);
    const claims = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(claims).toHaveLength(6);
    const actor = 'worker:a';
    const runs = await startRuns(exec(), claims.map((c) => ({ intentId: c.intentId, claimToken: c.claimToken, mode: 'FAILFAST' as const, door: 'worker' as const, actor })));
    expect(runs.every((r) => r.claimHeld && r.runId)).toBe(true);

    // Two claims are rescued before the step batch, two more before the end batches: the batches go on for the rest.
    await rescue([claims[1], claims[4]]);
    const steps = await startSteps(
      exec(),
      claims.map((c, i) => ({ intentId: c.intentId, claimToken: c.claimToken, runId: runs[i].runId!, round: runs[i].round!, position: 0, bridge: 'input', accepts: ['RECEIVED' as const], replayed: undefined, actor })),
    );
    expect(steps.map((s) => s.stepId !== null)).toEqual([true, false, true, true, false, true]);
    expect(steps.map((s) => s.stepStatus)).toEqual(['running', null, 'running', 'running', null, 'running']);

    await rescue([claims[2]]);
    const held = [0, 3, 5];
    const ends = await finishSteps(
      exec(),
      [0, 2, 3, 5].map((i) => ({ intentId: claims[i].intentId, claimToken: claims[i].claimToken, runId: runs[i].runId!, stepId: steps[i].stepId!, bridge: 'input', status: 'completed' as const, result: { i }, error: null, actor })),
    );
    expect(ends.map((e) => e !== null)).toEqual([true, false, true, true]);
    const closed = await finishRuns(exec(), claims.map((c, i) => ({ intentId: c.intentId, claimToken: c.claimToken, runId: runs[i].runId!, status: 'succeeded' as const, error: null, actor })));
    expect(closed.map((r) => r !== null)).toEqual(claims.map((_, i) => held.includes(i)));
    expect(closed[0]!.intent.id).toBe(claims[0].intentId);
    const settled = await settleClaims(db(), claims.map((c) => ({ intentId: c.intentId, claimToken: c.claimToken, outcome: 'completed' as const, error: null })));
    expect(settled).toEqual(claims.map((_, i) => held.includes(i)));

    const states = await workStates();
    for (const [i, c] of claims.entries()) expect(states[c.intentId]).toBe(held.includes(i) ? 'completed' : 'retryable');
    // What was written, once each, only for the held claims (the rescue closed the others' runs as abandoned).
    const stepRows = await db().$queryRaw<{ id: string; status: string }[]>`SELECT intent_id::text AS id, status FROM pipeline_steps ORDER BY intent_id`;
    expect(stepRows.map((s) => `${s.id}:${s.status}`)).toEqual(
      [0, 2, 3, 5].map((i) => `${claims[i].intentId}:${held.includes(i) ? 'completed' : 'abandoned'}`).sort(),
    );
    const runRows = await db().$queryRaw<{ id: string; status: string }[]>`SELECT intent_id::text AS id, status FROM pipeline_runs`;
    for (const [i, c] of claims.entries()) expect(runRows.find((r) => r.id === c.intentId)?.status).toBe(held.includes(i) ? 'succeeded' : 'abandoned');
    expect(await count`SELECT count(*) AS n FROM audit_events WHERE action = 'bridge_completed'`).toBe(3);
    expect(await count`SELECT count(*) AS n FROM audit_events WHERE action = 'pipeline_finished'`).toBe(3);
    expect(await count`SELECT count(*) AS n FROM audit_events WHERE action = 'claim_rescued'`).toBe(3);
    const report = await checkInvariants(db(), { checks: CHECKS.filter((c) => c.name === 'pipeline_steps_once') });
    expect(report.violationCount).toBe(0);
  });

  it('the claim grants its token to the claim’s fence: an earlier claim’s engine writes are refused from the claim’s commit on', async () => {
    const [id] = await newIntents(1);
    const [first] = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(await highestAcceptedToken(`worker-claim:${id}`)).toBe(Number(first.claimToken));
    await rescue([first]);
    const [second] = await claimDueIntents(db(), claimArgs('worker-b'));
    expect(await highestAcceptedToken(`worker-claim:${id}`)).toBe(Number(second.claimToken));
  });

  it('a claim’s fence holds its token only while the claim runs: a claim that ended, however, has its writes refused, and no fence is left behind', async () => {
    const ids = await newIntents(4);
    const claims = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(claims.map((c) => c.intentId)).toEqual(ids);
    const [done, retried, released, running] = claims;
    expect(
      await settleClaims(db(), [
        { intentId: done.intentId, claimToken: done.claimToken, outcome: 'completed', error: null },
        { intentId: retried.intentId, claimToken: retried.claimToken, outcome: 'retry', delayMs: 60_000, error: 'attempt 1 of 5: boom' },
        { intentId: released.intentId, claimToken: released.claimToken, outcome: 'release', delayMs: 0, reason: 'released by a stopping worker' },
      ]),
    ).toEqual([true, true, true]);
    const fences = await db().$queryRaw<{ resource: string; token: bigint }[]>`SELECT resource, token FROM lease_fences`;
    expect(fences).toEqual([{ resource: `worker-claim:${running.intentId}`, token: BigInt(running.claimToken) }]);
    for (const ended of [done, retried, released]) {
      const refused = await updateIntentStatus({ id: ended.intentId, status: 'NORMALIZED' }, tester, { fencing: claimFence(ended.intentId, ended.claimToken) }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(FencingTokenStaleError);
    }
    await updateIntentStatus({ id: running.intentId, status: 'NORMALIZED' }, tester, { fencing: claimFence(running.intentId, running.claimToken) });
    expect(await count`SELECT count(*) AS n FROM intents WHERE status = 'NORMALIZED'`).toBe(1);
    const report = await checkInvariants(db(), { checks: CHECKS.filter((c) => c.name === 'fenced_writes_current') });
    expect(report.violationCount).toBe(0);
  });
});

describe('the execution lock: a worker’s claim and an operator’s run exclude each other, in every order', () => {
  it('claim committed first: the operator’s run is refused at once (423), naming the worker', async () => {
    const [id] = await newIntents(1);
    const [claim] = await claimDueIntents(db(), claimArgs('worker-a'));
    const err = await runPipeline({ id }, tester).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect((err as LockTimeoutError).httpStatus).toBe(423);
    expect((err as Error).message).toContain('worker-a');
    expect(await count`SELECT count(*) AS n FROM pipeline_runs`).toBe(0);
    expect((await workStates())[id]).toBe('running');
    expect(claim.intentId).toBe(id);
  });

  it('claim in flight (not committed): the operator’s run is refused at once by the lock the claim holds', async () => {
    const [id] = await newIntents(1);
    const s = await session('bridge-test:claimer');
    await s.query('BEGIN');
    expect(await claimDueIntents(onSession(s), claimArgs('worker-a'))).toHaveLength(1);
    const err = await runPipeline({ id }, tester).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockTimeoutError);
    await s.query('COMMIT');
    await s.end();
    expect(await count`SELECT count(*) AS n FROM pipeline_runs`).toBe(0);
  });

  it('operator’s run holding the lock: a claim leaves the intent waiting, and claims it once the run is over', async () => {
    const [busy, free] = await newIntents(2);
    // The operator's run, held at a known point: its execution lock taken as withPipelineLock takes it.
    const s = await session('bridge-test:operator');
    await s.query('BEGIN');
    expect((await s.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1::int, hashtext($2)) AS locked', [PIPELINE_LOCK_NAMESPACE, busy])).rows[0].locked).toBe(true);
    const claims = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(claims.map((c) => c.intentId)).toEqual([free]);
    expect((await workStates())[busy]).toBe('available');
    await s.query('COMMIT');
    await s.end();
    expect((await claimDueIntents(db(), claimArgs('worker-b'))).map((c) => c.intentId)).toEqual([busy]);
  });

  it('operator’s run started first and running: the worker claims nothing of it while the run holds the lock', async () => {
    const [id] = await newIntents(1);
    const run = started(runPipeline({ id }, tester, { bridges: [holding.name] }));
    await entered.wait; // the run is inside its bridge, holding the execution lock
    expect(await claimDueIntents(db(), claimArgs('worker-a'))).toEqual([]);
    held.open();
    expect((await run).run.status).toBe('succeeded');
  });
});
