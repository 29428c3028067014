import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { InvalidTransitionError, LockTimeoutError } from '@/lib/intents/errors';
import { NotFoundError, ValidationError } from '@/lib/shared/errors';
import { updateIntentStatus } from '@/lib/intents/commands';
import { getIntentAudit } from '@/lib/intents/queries';
import { registerBridge, unregisterBridge } from '@/lib/pipeline/bridges';
import { BridgeError, UnknownBridgeError } from '@/lib/pipeline/errors';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { listPipelineRuns, retryPipeline, runPipeline } from '@/lib/pipeline/run';
import type { Bridge } from '@/lib/pipeline/types';
import { gate, resetEngine, started } from '../barriers';
import { intentRow, makeIntent, tester, untyped } from '../helpers';
import { api, signInApiCaller } from '../api/route-client';

/**
 * The BridgeSet pipeline: each built-in bridge's contract, FAILFAST and CONTINUE with a failing bridge (on
 * this state machine: the failing bridge takes Feedback's place, since NORMALIZED → COMPLETED is not a
 * transition), the NOWAIT execution lock under two concurrent executions, audit of every step, replay of recorded
 * steps, and the HTTP door.
 */
const failing: Bridge = {
  name: 'test-failing',
  description: 'always fails',
  accepts: ['RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED'],
  async run() {
    throw new BridgeError('Test failure');
  },
};

let held = gate();
let entered = gate();
const holding: Bridge = {
  name: 'test-holding',
  description: 'waits for the test to open its gate',
  accepts: ['RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED'],
  async run() {
    entered.open();
    await held.wait;
    return { held: true };
  },
};

let flakyFailures = 0;
let flakyCalls = 0;
const flaky: Bridge = {
  name: 'test-flaky',
  description: 'fails while flakyFailures > 0',
  accepts: ['NORMALIZED'],
  async run() {
    flakyCalls++;
    if (flakyFailures > 0) {
      flakyFailures--;
      throw new BridgeError('flaky');
    }
    return { calls: flakyCalls };
  },
};

beforeAll(async () => {
  registerBridge(failing, { replace: true });
  registerBridge(holding, { replace: true });
  registerBridge(flaky, { replace: true });
  await signInApiCaller();
});
afterAll(async () => {
  for (const b of [failing, holding, flaky]) unregisterBridge(b.name);
  await disconnectLockDb();
});
beforeEach(resetEngine);
afterEach(() => {
  held.open();
  held = gate();
  entered = gate();
});

const stepsOf = async (intentId: string) =>
  db().$queryRaw<{ bridge: string; status: string }[]>`SELECT bridge, status FROM pipeline_steps WHERE intent_id = ${intentId}::uuid ORDER BY id`;

describe('each bridge on its own (cases 1–4)', () => {
  it('Input: RECEIVED → NORMALIZED', async () => {
    const intent = await makeIntent('RECEIVED');
    const { intent: after, run } = await runPipeline({ id: intent.id }, tester, { bridges: ['input'] });
    expect(after.status).toBe('NORMALIZED');
    expect(run.status).toBe('succeeded');
    expect(run.steps).toMatchObject([{ bridge: 'input', status: 'completed' }]);
  });

  it('Input refuses an empty payload (the step fails, FAILFAST fails the intent)', async () => {
    const intent = await makeIntent('RECEIVED', {});
    const { intent: after, run } = await runPipeline({ id: intent.id }, tester);
    expect(run.status).toBe('failed');
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]).toMatchObject({ bridge: 'input', status: 'failed' });
    expect(run.steps[0].error).toMatch(/bridge_failed: The payload is empty/);
    expect(after.status).toBe('FAILED');
  });

  it('Normalize: NORMALIZED → PROCESSED, writing the canonical payload as a correction', async () => {
    const intent = await makeIntent('NORMALIZED', { order: '  A-7 ', nested: { note: ' x ' }, amount: 3 });
    const { intent: after, run } = await runPipeline({ id: intent.id }, tester, { bridges: ['normalize'] });
    expect(after.status).toBe('PROCESSED');
    expect(after.payload).toEqual({ order: 'A-7', nested: { note: 'x' }, amount: 3 });
    expect(run.steps[0]).toMatchObject({ bridge: 'normalize', status: 'completed', result: { changed: ['order', 'nested'] } });
  });

  it('Feedback: stays PROCESSED without feedback; CORRECTED with it', async () => {
    const plain = await makeIntent('PROCESSED');
    const a = await runPipeline({ id: plain.id }, tester, { bridges: ['feedback'] });
    expect(a.intent.status).toBe('PROCESSED');
    expect(a.run.steps[0]).toMatchObject({ status: 'completed', result: { corrected: false } });

    const withFeedback = await makeIntent('PROCESSED', { order: 'A-2', amount: 10, feedback: { amount: 9 } });
    const b = await runPipeline({ id: withFeedback.id }, tester, { bridges: ['feedback'] });
    expect(b.intent.status).toBe('CORRECTED');
    expect(b.intent.payload.amount).toBe(9);
  });

  it('Output: PROCESSED → COMPLETED', async () => {
    const intent = await makeIntent('PROCESSED');
    const { intent: after } = await runPipeline({ id: intent.id }, tester, { bridges: ['output'] });
    expect(after.status).toBe('COMPLETED');
  });

  it('the whole BridgeSet: RECEIVED → COMPLETED, one version per change, every step audited', async () => {
    const intent = await makeIntent('RECEIVED', { order: ' A-9', amount: 5, feedback: { amount: 4 } });
    const { intent: after, run } = await runPipeline({ id: intent.id }, tester);
    expect(run.steps.map((s) => `${s.bridge}:${s.status}`)).toEqual(['input:completed', 'normalize:completed', 'feedback:completed', 'output:completed']);
    expect(after.status).toBe('COMPLETED');
    // NORMALIZED, canonical payload, PROCESSED, feedback correction (→ CORRECTED), COMPLETED.
    expect(after.version).toBe(5);
    const actions = (await getIntentAudit(intent.id)).map((e) => e.action);
    expect(actions.filter((a) => a === 'bridge_started')).toHaveLength(4);
    expect(actions.filter((a) => a === 'bridge_completed')).toHaveLength(4);
    expect(actions).toContain('pipeline_started');
    expect(actions.at(-1)).toBe('pipeline_finished');
  });
});

describe('FAILFAST and CONTINUE (cases 5–6)', () => {
  const set = ['input', 'normalize', 'test-failing', 'output'];

  it('FAILFAST: the failing bridge fails the intent and the bridges after it do not run', async () => {
    const intent = await makeIntent('RECEIVED');
    const { intent: after, run } = await runPipeline({ id: intent.id, mode: 'FAILFAST' }, tester, { bridges: set });
    expect(run.status).toBe('failed');
    expect(run.steps.map((s) => `${s.bridge}:${s.status}`)).toEqual(['input:completed', 'normalize:completed', 'test-failing:failed']);
    expect(after.status).toBe('FAILED');
    expect((await intentRow(intent.id)).status).toBe('FAILED');
    const audit = await getIntentAudit(intent.id);
    expect(audit.filter((e) => e.action === 'bridge_failed')).toHaveLength(1);
    expect(audit.some((e) => e.action === 'bridge_started' && (e.details as { bridge: string }).bridge === 'output')).toBe(false);
  });

  it('CONTINUE: the failure is recorded and the run goes on to COMPLETED', async () => {
    const intent = await makeIntent('RECEIVED');
    const { intent: after, run } = await runPipeline({ id: intent.id, mode: 'CONTINUE' }, tester, { bridges: set });
    expect(run.status).toBe('finished_with_errors');
    expect(run.steps.map((s) => `${s.bridge}:${s.status}`)).toEqual(['input:completed', 'normalize:completed', 'test-failing:failed', 'output:completed']);
    expect(run.error).toMatch(/test-failing: bridge_failed: Test failure/);
    expect(after.status).toBe('COMPLETED');
  });

  it('CONTINUE past a failed Input: the bridges that cannot run on RECEIVED are skipped, not failed', async () => {
    const intent = await makeIntent('RECEIVED', {});
    const { intent: after, run } = await runPipeline({ id: intent.id, mode: 'CONTINUE' }, tester);
    expect(run.steps.map((s) => `${s.bridge}:${s.status}`)).toEqual(['input:failed', 'normalize:skipped', 'feedback:skipped', 'output:skipped']);
    expect(after.status).toBe('RECEIVED');
  });
});

describe('the execution lock (NOWAIT)', () => {
  it('two concurrent executions of one intent: one runs, the other is refused without waiting for it, naming the holder', async () => {
    // Two runs at once first, so the lock pool has a connection for each.
    const [a, b] = [await makeIntent('RECEIVED'), await makeIntent('RECEIVED')];
    await Promise.all([a, b].map((i) => runPipeline({ id: i.id }, tester, { bridges: ['input'] })));
    const intent = await makeIntent('RECEIVED');
    const first = started(runPipeline({ id: intent.id }, tester, { bridges: ['input', 'test-holding', 'normalize'] }));
    await entered.wait; // the first run holds the lock and sits inside a bridge
    // Refused while the first run still holds the lock: had it waited for the lock, it would wait for ever (the
    // first run is let go only below), so an answer at all is the proof it did not wait.
    const second = await runPipeline({ id: intent.id }, tester).catch((e) => e);
    expect(second).toBeInstanceOf(LockTimeoutError);
    expect(second.httpStatus).toBe(423);
    expect(second.code).toBe('lock_timeout');
    expect(second.details.holders[0].applicationName).toBe(`bridge:pipeline_execute:${intent.id}`);
    held.open();
    const { run, intent: after } = await first;
    expect(run.status).toBe('succeeded');
    expect(after.status).toBe('PROCESSED');
    // The refused execution wrote nothing: one run, three steps.
    expect(await listPipelineRuns(intent.id)).toHaveLength(1);
    expect(await stepsOf(intent.id)).toHaveLength(3);
  });

  it('the lock does not stand in the way of the engine: the intent’s own status changes go through while a run holds it', async () => {
    const intent = await makeIntent('RECEIVED');
    const run = started(runPipeline({ id: intent.id }, tester, { bridges: ['test-holding', 'input', 'normalize'] }));
    await entered.wait;
    // The engine's row lock is a different lock: an operator's change of this very intent is not blocked.
    const moved = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED', nowait: true }, tester);
    expect(moved.intent.status).toBe('NORMALIZED');
    held.open();
    const { run: done, intent: after } = await run;
    // Input found its work done (skipped); Normalize went on from there.
    expect(done.steps.map((s) => `${s.bridge}:${s.status}`)).toEqual(['test-holding:completed', 'input:skipped', 'normalize:completed']);
    expect(after.status).toBe('PROCESSED');
  });
});

describe('recorded steps are replayed, not redone', () => {
  it('a second run of the round replays what the first completed and runs the failed bridge again', async () => {
    const intent = await makeIntent('RECEIVED');
    flakyFailures = 1;
    flakyCalls = 0;
    const bridges = ['input', 'test-flaky', 'normalize', 'output'];
    const first = await runPipeline({ id: intent.id }, tester, { bridges, failIntentOnFailure: false });
    expect(first.run.status).toBe('failed');
    expect(first.intent.status).toBe('NORMALIZED');
    const second = await runPipeline({ id: intent.id }, tester, { bridges });
    expect(second.run.steps.map((s) => `${s.bridge}:${s.status}`)).toEqual(['input:replayed', 'test-flaky:completed', 'normalize:completed', 'output:completed']);
    expect(second.run.steps[0].result).toEqual({ keys: 2 });
    expect(flakyCalls).toBe(2);
    expect(second.intent.status).toBe('COMPLETED');
    const completed = (await stepsOf(intent.id)).filter((s) => s.status === 'completed').map((s) => s.bridge);
    expect(completed.sort()).toEqual(['input', 'normalize', 'output', 'test-flaky']);
  });

  it('a retry of a FAILED intent starts a new round: nothing is replayed', async () => {
    const intent = await makeIntent('RECEIVED');
    const failed = await runPipeline({ id: intent.id }, tester, { bridges: ['input', 'test-failing'] });
    expect(failed.intent.status).toBe('FAILED');
    const retried = await retryPipeline({ id: intent.id, expectedVersion: failed.intent.version }, tester, { bridges: ['input', 'normalize'] });
    expect(retried.run.round).toBe(failed.run.round + 1);
    expect(retried.run.steps.map((s) => `${s.bridge}:${s.status}`)).toEqual(['input:completed', 'normalize:completed']);
  });
});

describe('refusals', () => {
  it('a COMPLETED or FAILED intent cannot enter the pipeline (409), a missing one is 404, bad input 400', async () => {
    for (const status of ['COMPLETED', 'FAILED'] as const) {
      const intent = await makeIntent(status);
      const err = await runPipeline({ id: intent.id }, tester).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidTransitionError);
      expect(err.httpStatus).toBe(409);
    }
    expect(await runPipeline({ id: '00000000-0000-4000-8000-000000000000' }, tester).catch((e) => e)).toBeInstanceOf(NotFoundError);
    const bad = await runPipeline({ id: (await makeIntent()).id, mode: untyped('SOMETIMES') }, tester).catch((e) => e);
    expect(bad).toBeInstanceOf(ValidationError);
    expect(bad.details.fields[0].field).toBe('mode');
    expect(await runPipeline({ id: (await makeIntent()).id }, tester, { bridges: ['nope'] }).catch((e) => e)).toBeInstanceOf(UnknownBridgeError);
    // Nothing was written by any refusal.
    expect(Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pipeline_runs`)[0].n)).toBe(0);
  });
});

describe('POST /api/intents/:id/pipeline', () => {
  const post = (id: string, body: unknown = {}) => api.pipeline(id, body);

  it('200 with the intent and the run; 409, 400 and 423 in the envelope', async () => {
    const intent = await makeIntent('RECEIVED');
    const ok = await post(intent.id, { mode: 'CONTINUE' });
    expect(ok.status).toBe(200);
    expect(ok.body.intent.status).toBe('COMPLETED');
    expect(ok.body.run).toMatchObject({ mode: 'CONTINUE', status: 'succeeded' });
    expect(ok.body.run.steps.map((s: { bridge: string }) => s.bridge)).toEqual(['input', 'normalize', 'feedback', 'output']);
    for (const s of ok.body.run.steps) expect(Object.keys(s)).toEqual(expect.arrayContaining(['bridge', 'status', 'startedAt', 'finishedAt']));

    expect((await post(intent.id)).status).toBe(409);
    const bad = await post(intent.id, { mode: 'x', extra: 1 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['extra', 'mode']);

    const busy = await makeIntent('RECEIVED');
    const run = started(runPipeline({ id: busy.id }, tester, { bridges: ['test-holding'] }));
    await entered.wait;
    const refused = await post(busy.id);
    expect(refused.status).toBe(423);
    expect(refused.body.error.code).toBe('lock_timeout');
    held.open();
    await run;
  });
});
