import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { updateIntentStatus } from '@/lib/intents/commands';
import { LockTimeoutError, InvalidTransitionError, VersionConflictError } from '@/lib/intents/errors';
import { CHECKS } from '@/lib/invariants/checks';
import { registerBridge, unregisterBridge } from '@/lib/pipeline/bridges';
import { BridgeError, RerunRefusedError } from '@/lib/pipeline/errors';
import { disconnectLockDb, PIPELINE_LOCK_NAMESPACE } from '@/lib/pipeline/lock';
import { planRerun, rerunPipeline, type RerunPlan } from '@/lib/pipeline/rerun';
import { planRerunMany, rerunMany } from '@/lib/pipeline/rerun-many';
import { runPipeline } from '@/lib/pipeline/run';
import type { Bridge, PipelineRun } from '@/lib/pipeline/types';
import { ValidationError } from '@/lib/shared/errors';
import { closeSession, resetEngine, session } from '../barriers';
import { intentRow, makeIntent, tester } from '../helpers';
import { api, signInApiCaller } from '../api/route-client';

/**
 * Rerun from a step: reused steps are not run again (each bridge counts its calls), the rerun is a new round with a
 * run record of its own, the plan answered before equals what ran, another execution holding the intent refuses it
 * at once, the reason is audited, and no bridge completes twice in a round.
 */
const calls: Record<string, number> = {};
let failLast = true;
const counting = (name: string, accepts: Bridge['accepts'], body: Bridge['run']): Bridge => ({
  name,
  description: `test bridge ${name}`,
  accepts,
  effects: { moves: [], correction: null },
  async run(ctx) {
    calls[name] = (calls[name] ?? 0) + 1;
    return body(ctx);
  },
});
const first = counting('rr-first', ['RECEIVED'], async (ctx) => {
  await ctx.moveTo('NORMALIZED');
  return { n: 1 };
});
const second = counting('rr-second', ['NORMALIZED'], async (ctx) => {
  await ctx.moveTo('PROCESSED');
  return { n: 2 };
});
const last = counting('rr-last', ['PROCESSED', 'CORRECTED'], async (ctx) => {
  if (failLast) throw new BridgeError('the downstream service said no');
  await ctx.moveTo('COMPLETED');
  return { n: 3 };
});
const SET = ['rr-first', 'rr-second', 'rr-last'];
const bridges = { bridges: SET };

beforeAll(async () => {
  for (const b of [first, second, last]) registerBridge(b, { replace: true });
  await signInApiCaller();
});
afterAll(async () => {
  for (const b of [first, second, last]) unregisterBridge(b.name);
  await disconnectLockDb();
});
beforeEach(async () => {
  await resetEngine();
  for (const k of Object.keys(calls)) delete calls[k];
  failLast = true;
});

/** An intent whose run failed at the last bridge: FAILED, the first two steps completed in round 1. */
async function failedAtLast() {
  const intent = await makeIntent('RECEIVED');
  const { intent: after, run } = await runPipeline({ id: intent.id }, tester, bridges);
  expect(after.status).toBe('FAILED');
  expect(run.steps.map((s) => s.status)).toEqual(['completed', 'completed', 'failed']);
  return intent.id;
}

const runsOf = (id: string) => db().$queryRaw<{ id: string; round: number; status: string }[]>`SELECT id::text, round, status FROM pipeline_runs WHERE intent_id = ${id}::uuid ORDER BY started_at`;

/** What ran, said as the plan says it: reused (replayed or skipped again) or run. */
const asPlanned = (run: PipelineRun) => run.steps.map((s) => ({ bridge: s.bridge, action: s.status === 'replayed' || s.status === 'skipped' ? 'reuse' : 'run' }));
const planned = (plan: RerunPlan) => plan.steps.map((s) => ({ bridge: s.bridge, action: s.action }));

async function stepsOnceViolations() {
  const check = CHECKS.find((c) => c.name === 'pipeline_steps_once')!;
  return db().$transaction((tx) => check.run(tx));
}

describe('rerun from a step', () => {
  it('reuses the steps before the chosen bridge without running them, and runs the rest as a new round: the plan shown is what ran', async () => {
    const id = await failedAtLast();
    expect(calls).toEqual({ 'rr-first': 1, 'rr-second': 1, 'rr-last': 1 });

    const plan = await planRerun({ id, fromBridge: 'rr-last' }, bridges);
    expect(planned(plan)).toEqual([
      { bridge: 'rr-first', action: 'reuse' },
      { bridge: 'rr-second', action: 'reuse' },
      { bridge: 'rr-last', action: 'run' },
    ]);
    expect(plan.steps[0].recorded).toEqual({ status: 'completed', result: { n: 1 } });
    expect(plan.moves).toEqual([
      ['FAILED', 'RECEIVED'],
      ['RECEIVED', 'NORMALIZED'],
      ['NORMALIZED', 'PROCESSED'],
    ]);
    expect(plan.round).toBe(2);
    // Planning changes nothing.
    expect((await intentRow(id))?.status).toBe('FAILED');

    failLast = false;
    const result = await rerunPipeline({ id, fromBridge: 'rr-last', reason: 'the downstream service is back', expectedVersion: plan.intent.version }, tester, bridges);
    expect(calls).toEqual({ 'rr-first': 1, 'rr-second': 1, 'rr-last': 2 });
    expect(result.intent.status).toBe('COMPLETED');
    expect(result.plan).toEqual(plan);
    expect(asPlanned(result.run)).toEqual(planned(plan));
    expect(result.run.steps.map((s) => s.status)).toEqual(['replayed', 'replayed', 'completed']);
    expect(result.run.steps[1].result).toEqual({ n: 2 });

    const runs = await runsOf(id);
    expect(runs.map((r) => [r.round, r.status])).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
    expect(result.run.round).toBe(2);
    const rounds = await db().$queryRaw<{ round: number; bridge: string; status: string }[]>`
      SELECT round, bridge, status FROM pipeline_steps WHERE run_id = ${result.run.id}::uuid ORDER BY position`;
    expect(rounds.every((s) => s.round === 2)).toBe(true);
    expect((await stepsOnceViolations()).violations).toEqual([]);
  });

  it('audits the rerun with its reason: the run start names the bridge and the reused steps, every status move carries the reason', async () => {
    const id = await failedAtLast();
    failLast = false;
    const { run } = await rerunPipeline({ id, fromBridge: 'rr-second', reason: 'payload fixed by hand' }, tester, bridges);
    expect(calls).toEqual({ 'rr-first': 1, 'rr-second': 2, 'rr-last': 2 });
    const [started] = await db().$queryRaw<{ actor: string; details: Record<string, unknown> }[]>`
      SELECT actor, details FROM audit_events WHERE intent_id = ${id}::uuid AND action = 'pipeline_started' AND details->>'runId' = ${run.id}`;
    expect(started.actor).toBe(tester.name);
    expect(started.details).toMatchObject({ reason: 'payload fixed by hand', round: 2, rerun: { fromBridge: 'rr-second', reused: ['rr-first'] } });
    const moves = await db().$queryRaw<{ from: string; to: string; reason: string }[]>`
      SELECT from_status::text AS from, to_status::text AS to, details->>'reason' AS reason FROM audit_events
      WHERE intent_id = ${id}::uuid AND action = 'status_change' AND details->>'reason' LIKE 'rerun from%' ORDER BY id`;
    expect(moves).toEqual([
      { from: 'FAILED', to: 'RECEIVED', reason: 'rerun from rr-second: payload fixed by hand' },
      { from: 'RECEIVED', to: 'NORMALIZED', reason: 'rerun from rr-second: payload fixed by hand' },
    ]);
  });

  it('refused at once while another execution holds the intent (423), changing nothing', async () => {
    const id = await failedAtLast();
    const before = await intentRow(id);
    const holder = await session('bridge-test:rerun-holder');
    try {
      // The barrier: the second connection holds the execution lock before the rerun asks for it.
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [PIPELINE_LOCK_NAMESPACE, id]);
      const err = await rerunPipeline({ id, fromBridge: 'rr-last', reason: 'try again' }, tester, bridges).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LockTimeoutError);
      expect((err as LockTimeoutError).httpStatus).toBe(423);
      const refused = await api.pipeline(id, { fromBridge: 'rr-last', reason: 'try again' });
      expect(refused.status).toBe(423);
      expect(refused.body.error.code).toBe('lock_timeout');
    } finally {
      await holder.query('ROLLBACK');
      await closeSession(holder);
    }
    expect(await intentRow(id)).toEqual(before);
    expect(await runsOf(id)).toHaveLength(1);
    expect(calls['rr-last']).toBe(1);
  });

  it('refused (423) while a worker holds the intent’s claim, as any second execution is', async () => {
    const id = await failedAtLast();
    // As a worker leaves its claim between failing the intent and settling the claim.
    await db().$executeRaw`UPDATE intent_work SET state = 'running', claimed_by = 'worker-test', claim_token = nextval('intent_work_claim_token_seq') WHERE intent_id = ${id}::uuid`;
    const err = await rerunPipeline({ id, fromBridge: 'rr-last', reason: 'r' }, tester, bridges).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect((err as Error).message).toContain('worker-test');
    expect((await intentRow(id))?.status).toBe('FAILED');
  });

  it('refuses what it cannot plan: an unknown bridge or a missing reason (400 naming the field), a step before it the latest run did not finish, a changed version, a COMPLETED intent', async () => {
    const id = await failedAtLast();
    await expect(planRerun({ id, fromBridge: 'nope' }, bridges)).rejects.toBeInstanceOf(ValidationError);
    await expect(rerunPipeline({ id, fromBridge: 'rr-last', reason: '  ' }, tester, bridges)).rejects.toBeInstanceOf(ValidationError);
    const plan = await planRerun({ id, fromBridge: 'rr-last' }, bridges);
    await expect(rerunPipeline({ id, fromBridge: 'rr-last', reason: 'r', expectedVersion: plan.intent.version - 1 }, tester, bridges)).rejects.toBeInstanceOf(VersionConflictError);

    // Failed at the second bridge: the third cannot be rerun on its own (nothing of the second to reuse).
    failLast = false;
    const early = await makeIntent('RECEIVED', { order: '' });
    const breaking = counting('rr-break', ['NORMALIZED'], async () => {
      throw new BridgeError('broken');
    });
    registerBridge(breaking, { replace: true });
    try {
      await runPipeline({ id: early.id }, tester, { bridges: ['rr-first', 'rr-break', 'rr-last'] });
      const refused = await planRerun({ id: early.id, fromBridge: 'rr-last' }, { bridges: ['rr-first', 'rr-break', 'rr-last'] }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RerunRefusedError);
      expect((refused as RerunRefusedError).details).toMatchObject({ field: 'fromBridge', bridge: 'rr-break' });
    } finally {
      unregisterBridge('rr-break');
    }

    const done = await rerunPipeline({ id, fromBridge: 'rr-last', reason: 'r' }, tester, bridges);
    expect(done.intent.status).toBe('COMPLETED');
    await expect(planRerun({ id, fromBridge: 'rr-first' }, bridges)).rejects.toBeInstanceOf(InvalidTransitionError);
  });

  it('a stuck intent (left mid-way, no worker will take it) is failed with the reason first, then rerun as a new round', async () => {
    const intent = await makeIntent('PROCESSED');
    const plan = await planRerun({ id: intent.id, fromBridge: 'rr-first' }, bridges);
    expect(plan.moves).toEqual([
      ['PROCESSED', 'FAILED'],
      ['FAILED', 'RECEIVED'],
    ]);
    expect(plan.steps.every((s) => s.action === 'run')).toBe(true);
    failLast = false;
    const { intent: after, run } = await rerunPipeline({ id: intent.id, fromBridge: 'rr-first', reason: 'stuck since Tuesday' }, tester, bridges);
    expect(after.status).toBe('COMPLETED');
    expect(run.steps.map((s) => s.status)).toEqual(['completed', 'completed', 'completed']);
    // One queued for a worker is not stuck.
    const queued = await makeIntent('RECEIVED');
    await expect(planRerun({ id: queued.id, fromBridge: 'rr-first' }, bridges)).rejects.toBeInstanceOf(InvalidTransitionError);
  });

  it('an intent without a work row (older than the queue) still reruns as a new round, after its runs’ rounds', async () => {
    const id = await failedAtLast();
    await db().$executeRaw`DELETE FROM intent_work WHERE intent_id = ${id}::uuid`;
    const plan = await planRerun({ id, fromBridge: 'rr-second' }, bridges);
    expect(plan.round).toBe(2);
    failLast = false;
    const { run } = await rerunPipeline({ id, fromBridge: 'rr-second', reason: 'r' }, tester, bridges);
    expect(run.round).toBe(2);
    expect(run.steps.map((s) => s.status)).toEqual(['replayed', 'completed', 'completed']);
    expect(calls).toEqual({ 'rr-first': 1, 'rr-second': 2, 'rr-last': 2 });
  });

  it('several at once: the summed plan lists every intent, the rerun runs exactly those', async () => {
    const a = await failedAtLast();
    const b = await failedAtLast();
    const plan = await planRerunMany({ ids: [a, b], fromBridge: 'rr-last' }, bridges);
    expect(plan.plans.map((p) => p.intentId).sort()).toEqual([a, b].sort());
    expect(plan.refused).toEqual([]);
    expect(plan.summary).toEqual([
      { bridge: 'rr-first', reused: 2, run: 0 },
      { bridge: 'rr-second', reused: 2, run: 0 },
      { bridge: 'rr-last', reused: 0, run: 2 },
    ]);
    failLast = false;
    const { results } = await rerunMany({ ids: plan.ids, fromBridge: 'rr-last', reason: 'bulk retry after the fix' }, tester, bridges);
    expect(results).toEqual(expect.arrayContaining([expect.objectContaining({ intentId: a, ok: true, intentStatus: 'COMPLETED' }), expect.objectContaining({ intentId: b, ok: true })]));
    expect(calls).toEqual({ 'rr-first': 2, 'rr-second': 2, 'rr-last': 4 });

    // "All failed matching the filter": the workers' failed list, as a worker that ran out of attempts leaves it.
    failLast = true;
    const c = await failedAtLast();
    await db().$executeRaw`UPDATE intent_work SET state = 'failed', last_error = 'rr-last: the downstream service said no' WHERE intent_id = ${c}::uuid`;
    const byFilter = await planRerunMany({ errorContains: 'DOWNSTREAM', fromBridge: 'rr-last' }, bridges);
    expect(byFilter.ids).toEqual([c]);
    expect((await planRerunMany({ errorContains: 'no such text', fromBridge: 'rr-last' }, bridges)).ids).toEqual([]);
  });
});

describe('the API: POST /api/intents/:id/pipeline with { fromBridge, reason }, GET …/pipeline/plan', () => {
  it('plans and reruns through the HTTP door; bad input is 400 naming the field', async () => {
    const id = await failedAtLast();
    const badBridge = await api.rerunPlan(id, 'no-such-bridge');
    expect(badBridge.status).toBe(400);
    expect(badBridge.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['fromBridge']);
    const noReason = await api.pipeline(id, { fromBridge: 'output' });
    expect(noReason.status).toBe(400);
    expect(noReason.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['reason']);
    const unknown = await api.pipeline(id, { fromBridge: 'no-such-bridge', reason: 'r' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(['fromBridge']);
    const reasonAlone = await api.pipeline(id, { reason: 'r' });
    expect(reasonAlone.status).toBe(400);

    // The default BridgeSet (input, normalize, feedback, output) on an intent failed at its last bridge.
    const intent = await makeIntent('CORRECTED');
    await updateIntentStatus({ id: intent.id, status: 'FAILED', reason: 'output refused' }, tester);
    const plan = await api.rerunPlan(intent.id, 'input');
    expect(plan.status).toBe(200);
    expect(plan.body.steps.map((s: { action: string }) => s.action)).toEqual(['run', 'run', 'run', 'run']);
    expect(plan.body.steps[0].mayChange).toEqual({ moves: [['RECEIVED', 'NORMALIZED']], correction: null, events: ['evt.intent.status_changed'] });
    const ran = await api.pipeline(intent.id, { fromBridge: 'input', reason: 'retry from the top', expectedVersion: plan.body.intent.version });
    expect(ran.status).toBe(200);
    expect(ran.body.plan).toEqual(plan.body);
    expect(ran.body.intent.status).toBe('COMPLETED');
  });
});
