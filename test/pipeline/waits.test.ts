import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { CHECKS } from '@/lib/invariants/checks';
import { checkInvariants } from '@/lib/invariants/run';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { z } from 'zod';
import { approvalAnswerSchema, registerBridge, unregisterBridge } from '@/lib/pipeline/bridges';
import { pipelineHistory } from '@/lib/pipeline/history';
import { listPipelineRuns, runPipeline } from '@/lib/pipeline/run';
import { highestAcceptedToken } from '@/lib/leases/fencing';
import { AnswerConflictError, answerWait, fireDueWaits, listOpenWaits, suspendClaim, WaitClosedError } from '@/lib/pipeline/waits';
import type { JsonObject } from '@/lib/shared/json';
import { workerConfig } from '@/lib/workers/config';
import { claimDueIntents, rescueStaleClaims, type Claim } from '@/lib/workers/repository';
import { Worker } from '@/lib/workers/worker';
import { resetEngine, session, waitForWaiters } from '../barriers';
import { ValidationError } from '@/lib/shared/errors';
import { FinalBridgeError } from '@/lib/pipeline/errors';
import type { Bridge } from '@/lib/pipeline/types';
import { tester } from '../helpers';
import { getIntentTimeline } from '@/lib/timeline/timeline';
import { api, namedFields, signInApiCaller } from '../api/route-client';

/**
 * Waits for an answer from outside (lib/pipeline/waits.ts), with the `approval` bridge: a worker's run suspends and
 * gives its claim back; N answers at once decide the wait once; an answer and the deadline, forced in both orders
 * with a held row lock, decide it once; a worker lost after the answer was recorded has its claim rescued and the
 * run resumes once; each deadline rule; the HTTP door's validation and answers.
 */
const SET = ['input', 'normalize', 'approval', 'feedback', 'output'];
const worker = new Worker(workerConfig({ bridges: SET, maxAttempts: 3, retry: { baseMs: 0, jitterMs: 0, maxDelayMs: 0 } }), () => undefined);

beforeAll(signInApiCaller);
beforeEach(resetEngine);
afterAll(disconnectLockDb);

const claimAll = (limit = 10): Promise<Claim[]> => claimDueIntents(db(), { workerName: 'test-worker', limit, leaseMs: 30_000, maxAttempts: 3 });
const runOnce = async (): Promise<number> => {
  const claims = await claimAll();
  for (const c of claims) await worker.process(c, new AbortController().signal);
  return claims.length;
};
const work = async (id: string) =>
  (await db().$queryRaw<{ state: string; attempt: number; runAfter: Date; leaseUntil: Date | null; claimedBy: string | null }[]>`
    SELECT state, attempt, run_after AS "runAfter", lease_until AS "leaseUntil", claimed_by AS "claimedBy" FROM intent_work WHERE intent_id = ${id}::uuid`)[0];
const waits = (id: string) =>
  db().$queryRaw<{ id: string; state: string; resumedAt: Date | null; deadline: Date }[]>`
    SELECT id::text, state, resumed_at AS "resumedAt", deadline FROM pipeline_waits WHERE intent_id = ${id}::uuid ORDER BY id`;
const answers = async (id: string) =>
  (await db().$queryRaw<{ outcome: string }[]>`SELECT outcome FROM pipeline_wait_answers WHERE intent_id = ${id}::uuid ORDER BY outcome`).map((r) => r.outcome);
const stepsOf = async (id: string) =>
  (await db().$queryRaw<{ s: string }[]>`SELECT bridge || ':' || status AS s FROM pipeline_steps WHERE intent_id = ${id}::uuid ORDER BY id`).map((r) => r.s);
const audits = async (id: string, action: string) => Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM audit_events WHERE intent_id = ${id}::uuid AND action = ${action}`)[0].n);
const intentStatus = async (id: string) => (await db().$queryRaw<{ status: string }[]>`SELECT status::text AS status FROM intents WHERE id = ${id}::uuid`)[0].status;
const invariantsHold = async () => {
  const report = await checkInvariants(db(), { checks: CHECKS.filter((c) => ['pipeline_steps_once', 'waits_decided_once', 'history_complete'].includes(c.name)) });
  expect(report.violationCount).toBe(0);
};

/**
 * A new intent claimed and run up to its approval with the worker's claim token, but not given back yet (the worker's
 * next statement, suspendClaim): the run has ended `waiting` and the claim is still running.
 */
async function waitingRunStillClaimed(order: string): Promise<{ id: string; claim: Claim; runStatus: string }> {
  const { id } = await createIntent({ payload: { order }, source: 'test' }, tester);
  const [claim] = await claimAll();
  const { run } = await runPipeline({ id, mode: 'FAILFAST' }, { name: 'test-worker' }, { door: 'worker', bridges: SET, claimToken: claim.claimToken, failIntentOnFailure: false });
  return { id, claim, runStatus: run.status };
}

/** A new intent run by a worker up to its approval: the run ends waiting and the claim is given back. */
async function waitingIntent(approval: JsonObject = {}): Promise<string> {
  const { id } = await createIntent({ payload: { order: 'W-1', approval }, source: 'test' }, tester);
  expect(await runOnce()).toBe(1);
  return id;
}

describe('a bridge that waits', () => {
  it('suspends its run: the run and step are recorded waiting, the work row waits until the deadline holding no claim', async () => {
    const id = await waitingIntent({ timeoutSeconds: 3600 });
    expect(await intentStatus(id)).toBe('PROCESSED');
    const row = await work(id);
    expect(row).toMatchObject({ state: 'waiting', attempt: 0, leaseUntil: null });
    const [wait] = await waits(id);
    expect(wait.state).toBe('waiting');
    expect(row.runAfter.getTime()).toBe(wait.deadline.getTime());
    expect(await stepsOf(id)).toEqual(['input:completed', 'normalize:completed', 'approval:waiting']);
    const runs = await db().$queryRaw<{ status: string }[]>`SELECT status FROM pipeline_runs WHERE intent_id = ${id}::uuid`;
    expect(runs.map((r) => r.status)).toEqual(['waiting']);
    // Nothing claims it while it waits.
    expect(await claimAll()).toEqual([]);
    expect((await listOpenWaits(db())).map((w) => [w.intentId, w.name, w.bridge])).toEqual([[id, 'approval', 'approval']]);
    // The intent's timeline says until when, written as every time in the console is.
    const opened = (await getIntentTimeline(id)).items.find((e) => e.summary.startsWith('Waits for'));
    expect(opened?.summary).toBe(`Waits for “approval” until ${wait.deadline.toISOString().replace('T', ' ').slice(0, 19)} UTC (then fail)`);

    // The answer makes it due; the next run replays what finished and resumes at the approval.
    const answered = await answerWait({ id, name: 'approval', body: { approved: true, note: 'fine' } }, tester);
    expect(answered.outcome).toBe('accepted');
    expect((await work(id)).state).toBe('available');
    expect(await runOnce()).toBe(1);
    expect(await intentStatus(id)).toBe('COMPLETED');
    expect((await work(id)).state).toBe('completed');
    expect(await stepsOf(id)).toEqual([
      'input:completed',
      'normalize:completed',
      'approval:waiting',
      'input:replayed',
      'normalize:replayed',
      'approval:completed',
      'feedback:completed',
      'output:completed',
    ]);
    const [done] = await waits(id);
    expect(done.state).toBe('answered');
    expect(done.resumedAt).not.toBeNull();
    expect(await audits(id, 'wait_resumed')).toBe(1);
    await invariantsHold();
  });

  it('N answers at once: one decides and resumes, the same body again is already applied, a different one a conflict', async () => {
    const id = await waitingIntent();
    const [wait] = await waits(id);
    // Every answer queues behind a held lock on the wait's row, then they go together.
    const holder = await session('bridge-test:wait-holder');
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM pipeline_waits WHERE id = $1 FOR UPDATE', [wait.id]);
    const N = 8;
    const bodies = Array.from({ length: N }, (_, i): JsonObject => (i % 2 === 0 ? { approved: true } : { approved: false, note: `no ${i}` }));
    const sent = bodies.map((body, i) => answerWait({ id, name: 'approval', body }, { name: `answerer-${i}` }).then((r) => r.outcome, (e: Error) => e));
    await waitForWaiters(N);
    await holder.query('COMMIT');
    const outcomes = await Promise.all(sent);

    const accepted = outcomes.filter((o) => o === 'accepted');
    expect(accepted).toHaveLength(1);
    const won = outcomes.indexOf('accepted');
    const winnerApproves = won % 2 === 0;
    for (const [i, o] of outcomes.entries()) {
      if (i === won) continue;
      // Approvals are all the same body; each rejection's note is its own.
      if (winnerApproves && i % 2 === 0) expect(o).toBe('already_applied');
      else expect(o).toBeInstanceOf(AnswerConflictError);
    }
    expect((await answers(id)).filter((o) => o === 'accepted')).toHaveLength(1);
    expect(await answers(id)).toHaveLength(N);
    expect(await audits(id, 'wait_answered')).toBe(N);

    // One resume: one claim, one approval step completed or failed, never twice.
    expect(await runOnce()).toBe(1);
    expect(await runOnce()).toBe(0);
    expect(await intentStatus(id)).toBe(winnerApproves ? 'COMPLETED' : 'FAILED');
    expect((await stepsOf(id)).filter((s) => s.startsWith('approval:'))).toEqual(['approval:waiting', winnerApproves ? 'approval:completed' : 'approval:failed']);
    expect(await audits(id, 'wait_resumed')).toBe(1);
    const [resumed, stopped] = (await pipelineHistory(id)).runs;
    expect(resumed.wait).toBeUndefined();
    expect(stopped).toMatchObject({ status: 'waiting', wait: { id: wait.id, state: 'answered', answeredBy: `answerer-${won}` } });
    await invariantsHold();
    await holder.end();
  });

  it('an answer and the deadline, the answer first: it decides, the deadline finds nothing to fire', async () => {
    const id = await waitingIntent();
    const [wait] = await waits(id);
    await db().$executeRaw`UPDATE pipeline_waits SET deadline = now() - interval '1 second' WHERE id = ${wait.id}::bigint`;
    const holder = await session('bridge-test:wait-holder');
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM pipeline_waits WHERE id = $1 FOR UPDATE', [wait.id]);
    const answer = answerWait({ id, name: 'approval', body: { approved: true } }, tester).then((r) => r.outcome, (e: Error) => e);
    await waitForWaiters(1);
    const fire = fireDueWaits(db(), { actor: 'test-deadline', limit: 10 });
    await waitForWaiters(2);
    await holder.query('COMMIT');
    expect(await answer).toBe('accepted');
    expect(await fire).toEqual([]);
    expect((await waits(id))[0].state).toBe('answered');
    expect(await audits(id, 'wait_timed_out')).toBe(0);
    expect(await runOnce()).toBe(1);
    expect(await intentStatus(id)).toBe('COMPLETED');
    await invariantsHold();
    await holder.end();
  });

  it('an answer and the deadline, the deadline first: it fires, the answer is too late (recorded, 409), the rule fails the intent', async () => {
    const id = await waitingIntent({ onTimeout: 'fail' });
    const [wait] = await waits(id);
    await db().$executeRaw`UPDATE pipeline_waits SET deadline = now() - interval '1 second' WHERE id = ${wait.id}::bigint`;
    const holder = await session('bridge-test:wait-holder');
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM pipeline_waits WHERE id = $1 FOR UPDATE', [wait.id]);
    const fire = fireDueWaits(db(), { actor: 'test-deadline', limit: 10 });
    await waitForWaiters(1);
    const answer = answerWait({ id, name: 'approval', body: { approved: true } }, tester).then((r) => r.outcome, (e: Error) => e);
    await waitForWaiters(2);
    await holder.query('COMMIT');
    expect(await fire).toEqual([{ intentId: id, name: 'approval' }]);
    const late = await answer;
    expect(late).toBeInstanceOf(WaitClosedError);
    expect((late as WaitClosedError).httpStatus).toBe(409);
    expect(await answers(id)).toEqual(['too_late']);
    expect((await work(id)).state).toBe('available');
    expect(await runOnce()).toBe(1);
    expect(await intentStatus(id)).toBe('FAILED');
    expect((await work(id)).state).toBe('failed');
    expect(await audits(id, 'wait_resumed')).toBe(1);
    const [resumed, stopped] = (await pipelineHistory(id)).runs;
    expect(resumed.wait).toBeUndefined();
    expect(stopped).toMatchObject({ status: 'waiting', wait: { id: wait.id, state: 'timed_out' } });
    await invariantsHold();
    await holder.end();
  });

  it('a worker lost between the answer and the resume: its claim is rescued and the run resumes once', async () => {
    const id = await waitingIntent();
    await answerWait({ id, name: 'approval', body: { approved: true } }, tester);
    // A worker claims the due intent and dies before running it (its claim simply stays running).
    const [lost] = await claimAll();
    expect(lost.intentId).toBe(id);
    expect(await claimAll()).toEqual([]);
    await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE intent_id = ${id}::uuid`;
    expect(await rescueStaleClaims(db(), { rescuer: 'test', limit: 10 })).toHaveLength(1);
    expect(await runOnce()).toBe(1);
    expect(await intentStatus(id)).toBe('COMPLETED');
    expect(await audits(id, 'wait_resumed')).toBe(1);
    expect((await stepsOf(id)).filter((s) => s === 'approval:completed')).toHaveLength(1);
    await invariantsHold();
  });

  it('a worker lost between closing its waiting run and giving the claim back: the rescue gives it back for the wait, the attempt not counted', async () => {
    const { id, runStatus } = await waitingRunStillClaimed('W-gap');
    expect(runStatus).toBe('waiting');
    // Its last attempt: counted, the rescue would leave the next claim nothing but to fail an intent that only waited.
    await db().$executeRaw`UPDATE intent_work SET max_attempts = attempt, lease_until = now() - interval '1 second' WHERE intent_id = ${id}::uuid`;
    const before = await work(id);
    expect(await rescueStaleClaims(db(), { rescuer: 'test', limit: 10 })).toHaveLength(1);
    expect(await work(id)).toMatchObject({ state: 'waiting', attempt: before.attempt - 1, leaseUntil: null });
    expect(await claimAll()).toEqual([]);
    await answerWait({ id, name: 'approval', body: { approved: true } }, tester);
    expect((await work(id)).state).toBe('available');
    expect(await runOnce()).toBe(1);
    expect(await intentStatus(id)).toBe('COMPLETED');
    await invariantsHold();
  });

  it('the same rescue after the wait was answered: the claim is given back due at once', async () => {
    const { id } = await waitingRunStillClaimed('W-gap2');
    await answerWait({ id, name: 'approval', body: { approved: false, note: 'no' } }, tester);
    await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE intent_id = ${id}::uuid`;
    expect(await rescueStaleClaims(db(), { rescuer: 'test', limit: 10 })).toHaveLength(1);
    expect((await work(id)).state).toBe('available');
    expect(await runOnce()).toBe(1);
    expect(await intentStatus(id)).toBe('FAILED');
    await invariantsHold();
  });

  it('an answer that comes while the worker is still giving its claim back is not lost: the row is made due, not left waiting', async () => {
    // The run stops at the approval; its claim is not given back yet (the worker's next statement).
    const { id, claim, runStatus } = await waitingRunStillClaimed('W-race');
    expect(runStatus).toBe('waiting');
    // The answer decides the wait while the row is still running: it cannot make the row due yet.
    expect((await answerWait({ id, name: 'approval', body: { approved: true } }, tester)).outcome).toBe('accepted');
    expect((await work(id)).state).toBe('running');
    expect(await suspendClaim(db(), { intentId: id, claimToken: claim.claimToken })).toEqual({ settled: true, state: 'available' });
    // Given back, the claim fences nothing: its token is refused from here on.
    expect(await highestAcceptedToken(`worker-claim:${id}`)).toBeNull();
    expect(await runOnce()).toBe(1);
    expect(await intentStatus(id)).toBe('COMPLETED');
    await invariantsHold();
  });

  it('deadline rules: continue goes on with the default; retry fails the attempt and asks again', async () => {
    const cont = await waitingIntent({ onTimeout: 'continue' });
    const retry = await waitingIntent({ onTimeout: 'retry' });
    await db().$executeRaw`UPDATE pipeline_waits SET deadline = now() - interval '1 second'`;
    expect((await fireDueWaits(db(), { actor: 'test-deadline', limit: 10 })).map((f) => f.intentId).sort()).toEqual([cont, retry].sort());
    expect(await runOnce()).toBe(2);
    expect(await intentStatus(cont)).toBe('COMPLETED');
    const [step] = await db().$queryRaw<{ result: JsonObject }[]>`SELECT result FROM pipeline_steps WHERE intent_id = ${cont}::uuid AND bridge = 'approval' AND status = 'completed'`;
    expect(step.result).toMatchObject({ approved: true, outcome: 'timed_out' });

    // retry: the attempt failed (retried at once here), the next attempt opens a new wait.
    expect(await intentStatus(retry)).toBe('PROCESSED');
    expect((await work(retry)).state).toBe('retryable');
    expect(await runOnce()).toBe(1);
    expect((await waits(retry)).map((w) => w.state)).toEqual(['timed_out', 'waiting']);
    expect((await work(retry)).state).toBe('waiting');
    await invariantsHold();
  });

  it('an intent failed by an operator while it waits: the wait is cancelled, a later answer is too late, the queue row failed', async () => {
    const id = await waitingIntent();
    const { intent } = await updateIntentStatus({ id, status: 'FAILED', reason: 'given up' }, tester);
    expect(intent.status).toBe('FAILED');
    expect((await waits(id))[0].state).toBe('cancelled');
    expect((await work(id)).state).toBe('failed');
    expect(await answerWait({ id, name: 'approval', body: { approved: true } }, tester).catch((e) => e)).toBeInstanceOf(WaitClosedError);
    // The run keeps how it ended, and says what became of its wait: the API and the runs panel read it from there.
    const [run] = (await pipelineHistory(id)).runs;
    expect(run).toMatchObject({ status: 'waiting', wait: { name: 'approval', state: 'cancelled' } });
    await invariantsHold();
  });

  it('a correction made while it waits does not carry the intent past the approval: a rejection still fails it', async () => {
    const id = await waitingIntent();
    const corrected = await reevaluateIntent({ id, diff: { order: 'W-1b' }, reason: 'the order number was wrong', source: 'reviewer' }, tester);
    expect(corrected.status).toBe('CORRECTED');
    expect((await waits(id)).map((w) => w.state)).toEqual(['waiting']);
    expect((await answerWait({ id, name: 'approval', body: { approved: false, note: 'not after that change' } }, tester)).outcome).toBe('accepted');
    expect(await runOnce()).toBe(1);
    expect(await intentStatus(id)).toBe('FAILED');
    expect((await stepsOf(id)).slice(3)).toEqual(['input:replayed', 'normalize:replayed', 'approval:failed']);
    await invariantsHold();
  });

  it('an operator’s run that stops at a wait hands the intent to the workers once answered', async () => {
    const { id } = await createIntent({ payload: { order: 'W-op' }, source: 'test' }, tester);
    await db().$executeRaw`UPDATE intent_work SET state = 'cancelled'`; // as if claiming were not its way in
    const { run, wait } = await runPipeline({ id }, tester, { door: 'console', bridges: SET });
    expect(run.status).toBe('waiting');
    expect(wait).toMatchObject({ name: 'approval', state: 'waiting' });
    expect((await work(id)).state).toBe('waiting');
    await answerWait({ id, name: 'approval', body: { approved: true } }, tester);
    expect(await runOnce()).toBe(1);
    expect(await intentStatus(id)).toBe('COMPLETED');
    await invariantsHold();
  });
});

describe('a waiting bridge owns its step', () => {
  // A gate that runs on PROCESSED only: before waiting bridges owned their steps, a correction made while it waited
  // (PROCESSED → CORRECTED) made the resumed run skip it, and the decision with it.
  const GATED = ['input', 'normalize', 'gate', 'output'];
  const gated = new Worker(workerConfig({ bridges: GATED, maxAttempts: 3, retry: { baseMs: 0, jitterMs: 0, maxDelayMs: 0 } }), () => undefined);
  const runGated = async (): Promise<number> => {
    const claims = await claimAll();
    for (const c of claims) await gated.process(c, new AbortController().signal);
    return claims.length;
  };
  const gate: Bridge = {
    name: 'gate',
    description: 'waits for a go-ahead on PROCESSED intents',
    accepts: ['PROCESSED'],
    async run(ctx) {
      const decision = await ctx.waitFor({ name: 'gate', timeoutMs: 60_000, onTimeout: 'fail', answer: z.strictObject({ go: z.boolean() }) });
      if ((decision.answer as { go: boolean }).go !== true) throw new FinalBridgeError('stopped at the gate');
      return { went: ctx.intent.status };
    },
  };
  beforeAll(() => registerBridge(gate, { replace: true }));
  afterAll(() => unregisterBridge('gate'));

  const correctedWhileWaiting = async (): Promise<string> => {
    const { id } = await createIntent({ payload: { order: 'G-1' }, source: 'test' }, tester);
    expect(await runGated()).toBe(1);
    expect(await intentStatus(id)).toBe('PROCESSED');
    expect((await reevaluateIntent({ id, diff: { order: 'G-1b' }, reason: 'the order number was wrong', source: 'reviewer' }, tester)).status).toBe('CORRECTED');
    expect((await waits(id)).map((w) => w.state)).toEqual(['waiting']);
    return id;
  };

  it('a correction while it waits does not skip it: a stop decided after the correction still fails the intent', async () => {
    const id = await correctedWhileWaiting();
    await answerWait({ id, name: 'gate', body: { go: false } }, tester);
    expect(await runGated()).toBe(1);
    expect(await intentStatus(id)).toBe('FAILED');
    expect((await stepsOf(id)).slice(3)).toEqual(['input:replayed', 'normalize:replayed', 'gate:failed']);
    expect((await waits(id)).map((w) => w.state)).toEqual(['answered']);
    await invariantsHold();
  });

  it('a go-ahead after the correction is applied once, on the intent as it is, and the run goes on', async () => {
    const id = await correctedWhileWaiting();
    await answerWait({ id, name: 'gate', body: { go: true } }, tester);
    expect(await runGated()).toBe(1);
    expect(await intentStatus(id)).toBe('COMPLETED');
    expect((await stepsOf(id)).slice(3)).toEqual(['input:replayed', 'normalize:replayed', 'gate:completed', 'output:completed']);
    const [gateStep] = await db().$queryRaw<{ result: JsonObject }[]>`SELECT result FROM pipeline_steps WHERE intent_id = ${id}::uuid AND bridge = 'gate' AND status = 'completed'`;
    expect(gateStep.result).toEqual({ went: 'CORRECTED' });
    expect((await waits(id))[0].resumedAt).not.toBeNull();
    // The wait was no attempt: the run that resumed goes on with the attempt of the run that stopped to wait.
    expect((await listPipelineRuns(id)).map((r) => [r.status, r.attempt])).toEqual([
      ['succeeded', 1],
      ['waiting', 1],
    ]);
    await invariantsHold();
  });

  it('the same when the gate is the first bridge, whose step the claim itself opens: moved on from RECEIVED while it waits', async () => {
    registerBridge({ ...gate, name: 'gate-first', accepts: ['RECEIVED'] }, { replace: true });
    try {
      const open = { mode: 'FAILFAST', door: 'worker', actor: 'worker:test', bridge: 'gate-first', accepts: ['RECEIVED'] } as const;
      const first = new Worker(workerConfig({ bridges: ['gate-first', 'output'], maxAttempts: 3, retry: { baseMs: 0, jitterMs: 0, maxDelayMs: 0 } }), () => undefined);
      const runFirst = async () => {
        const claims = await claimDueIntents(db(), { workerName: 'test-worker', limit: 10, leaseMs: 30_000, maxAttempts: 3, open });
        for (const c of claims) await first.process(c, new AbortController().signal);
        return claims.length;
      };
      const { id } = await createIntent({ payload: { order: 'G-2' }, source: 'test' }, tester);
      expect(await runFirst()).toBe(1);
      await updateIntentStatus({ id, status: 'NORMALIZED', reason: 'checked by hand' }, tester);
      await answerWait({ id, name: 'gate', body: { go: false } }, tester);
      expect(await runFirst()).toBe(1);
      expect(await intentStatus(id)).toBe('FAILED');
      expect(await stepsOf(id)).toEqual(['gate-first:waiting', 'gate-first:failed']);
      await invariantsHold();
    } finally {
      unregisterBridge('gate-first');
    }
  });

  it('an intent sent back out of the round while it waits is decided by its status again: the wait is cancelled, the gate does not run on RECEIVED', async () => {
    const id = await correctedWhileWaiting();
    await updateIntentStatus({ id, status: 'FAILED', reason: 'given up' }, tester);
    await updateIntentStatus({ id, status: 'RECEIVED', reason: 'try again' }, tester);
    expect((await waits(id)).map((w) => w.state)).toEqual(['cancelled']);
    expect(await runGated()).toBe(1);
    // The new round reaches the gate on PROCESSED and asks again.
    expect(await intentStatus(id)).toBe('PROCESSED');
    expect((await waits(id)).map((w) => w.state)).toEqual(['cancelled', 'waiting']);
    await invariantsHold();
  });
});

describe('the shape of an answer', () => {
  const misdeclared = [
    { name: 'wait-dated', answer: z.object({ when: z.date() }) },
    { name: 'wait-bad-default', answer: z.strictObject({ ok: z.boolean() }), default: { ok: 'yes' } },
  ];
  beforeAll(() => {
    for (const { name, answer, default: fallback } of misdeclared) {
      registerBridge(
        { name, description: 'asks with a schema it got wrong', accepts: ['RECEIVED'], run: (ctx) => ctx.waitFor({ name: 'shape', timeoutMs: 60_000, onTimeout: 'fail', answer, default: fallback }) },
        { replace: true },
      );
    }
  });
  afterAll(() => misdeclared.forEach((b) => unregisterBridge(b.name)));

  it('a bridge’s schema is stored with its wait, and a body that does not match it is refused naming each field, recording nothing', async () => {
    const id = await waitingIntent();
    const [wait] = await listOpenWaits(db());
    expect(wait.answerSchema).toEqual(z.toJSONSchema(approvalAnswerSchema, { io: 'input' }));

    for (const [body, fields] of [
      [{ approved: 'yes' }, ['body.approved']],
      [{ aproved: true }, ['body.approved', 'body.aproved']],
      [{ approved: true, note: 'x'.repeat(501) }, ['body.note']],
    ] as const) {
      const refused = await answerWait({ id, name: 'approval', body }, tester).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ValidationError);
      expect((refused as ValidationError).issues.map((i) => i.field).sort()).toEqual([...fields].sort());
    }
    // Nothing was recorded or audited, and the wait still waits for a good answer.
    expect(await answers(id)).toEqual([]);
    expect(await audits(id, 'wait_answered')).toBe(0);
    expect((await waits(id)).map((w) => w.state)).toEqual(['waiting']);
    expect((await answerWait({ id, name: 'approval', body: { approved: false, note: 'not this one' } }, tester)).outcome).toBe('accepted');
  });

  it('a schema JSON Schema cannot say, or a default that does not fit it, fails the bridge’s step with the reason and opens no wait', async () => {
    for (const [bridge, reason] of [
      ['wait-dated', 'cannot be written as JSON Schema'],
      ['wait-bad-default', 'default answer of the wait "shape" does not match'],
    ]) {
      const { id } = await createIntent({ payload: { order: bridge }, source: 'test' }, tester);
      const { run } = await runPipeline({ id }, tester, { door: 'console', bridges: [bridge] });
      expect(run.status).toBe('failed');
      expect(run.steps[0].error).toContain(reason);
      expect(await waits(id)).toEqual([]);
    }
  });
});

describe('POST /api/intents/:id/pipeline/answers', () => {
  it('400 naming the field, 404 without such a wait, 200 accepted then already applied, 409 for a different body', async () => {
    const id = await waitingIntent();
    const missing = await api.answer(id, { body: { approved: true } });
    expect(missing.status).toBe(400);
    expect(namedFields(missing)).toEqual(['name']);
    const notObject = await api.answer(id, { name: 'approval', body: [1] });
    expect(notObject.status).toBe(400);
    expect(namedFields(notObject)).toEqual(['body']);
    const extra = await api.answer(id, { name: 'approval', body: {}, also: 1 });
    expect(extra.status).toBe(400);
    expect(namedFields(extra)).toEqual(['also']);
    const badName = await api.answer(id, { name: 'Not A Name', body: {} });
    expect(namedFields(badName)).toEqual(['name']);
    expect((await api.answer('not-a-uuid', { name: 'approval', body: {} })).status).toBe(400);
    const none = await api.answer(id, { name: 'callback', body: {} });
    expect(none.status).toBe(404);
    expect(none.body.error).toMatchObject({ code: 'not_found', message: `A wait named "callback" on intent ${id} was not found` });
    // An intent that does not exist is said to be missing, not its wait.
    const noIntent = await api.answer('00000000-0000-4000-8000-000000000000', { name: 'approval', body: { approved: true } });
    expect(noIntent.status).toBe(404);
    expect(noIntent.body.error.message).toBe('Intent 00000000-0000-4000-8000-000000000000 was not found');

    const shaped = await api.answer(id, { name: 'approval', body: { approved: 'yes', by: 'me' } });
    expect(shaped.status).toBe(400);
    expect(namedFields(shaped).sort()).toEqual(['body.approved', 'body.by']);
    expect(shaped.body.error.message).toContain('body.approved');

    const ok = await api.answer(id, { name: 'approval', body: { approved: true } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ outcome: 'accepted', wait: { intentId: id, name: 'approval', state: 'answered', onTimeout: 'fail' } });
    const again = await api.answer(id, { name: 'approval', body: { approved: true } });
    expect(again.status).toBe(200);
    expect(again.body.outcome).toBe('already_applied');
    const other = await api.answer(id, { name: 'approval', body: { approved: false } });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('answer_conflict');
    expect(await answers(id)).toEqual(['accepted', 'already_applied', 'conflict']);
  });
});
