import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { InvalidTransitionError, LockTimeoutError } from '@/lib/intents/errors';
import { FencingTokenStaleError } from '@/lib/leases/errors';
import { canonicalPayload, registerBridge, resolveBridgeSet, unregisterBridge } from '@/lib/pipeline/bridges';
import { UnknownBridgeError } from '@/lib/pipeline/errors';
import { disconnectLockDb, PIPELINE_LOCK_NAMESPACE, withPipelineLock } from '@/lib/pipeline/lock';
import { listPipelineRuns, retryPipeline, runPipeline } from '@/lib/pipeline/run';
import type { Bridge } from '@/lib/pipeline/types';
import { NotFoundError } from '@/lib/shared/errors';
import { closeSession, gate, resetEngine, session, started } from '../barriers';
import { intentRow, makeIntent, tester } from '../helpers';

/**
 * The pipeline's less travelled paths: the execution lock taken without an actor and refused by a holder outside
 * any transaction, bridges that fail with something other than a BridgeError, the registry's refusals, listing the
 * runs of an intent (none, one still running, one that failed), and the retry of an intent that is not FAILED or
 * that carries a lease's fence.
 */
const throwsPlain: Bridge = {
  name: 'test-throws-plain',
  description: 'fails with a plain Error',
  accepts: ['RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED'],
  async run() {
    throw new Error('plain failure');
  },
};
const throwsString: Bridge = {
  name: 'test-throws-string',
  description: 'fails with a thrown string',
  accepts: ['RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED'],
  async run() {
    throw 'not an Error object';
  },
};
let held = gate();
let entered = gate();
const holding: Bridge = {
  name: 'test-edges-holding',
  description: 'waits for the test to open its gate',
  accepts: ['RECEIVED'],
  async run() {
    entered.open();
    await held.wait;
    return { held: true };
  },
};

beforeAll(() => {
  for (const b of [throwsPlain, throwsString, holding]) registerBridge(b, { replace: true });
});
afterAll(async () => {
  for (const b of [throwsPlain, throwsString, holding]) unregisterBridge(b.name);
  await disconnectLockDb();
});
beforeEach(async () => {
  await resetEngine();
  held = gate();
  entered = gate();
});

describe('the execution lock', () => {
  it('without an actor: the body runs under the lock and its answer is returned', async () => {
    const intent = await makeIntent();
    const inside = await withPipelineLock(intent.id, async () => {
      const [row] = await db().$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ${PIPELINE_LOCK_NAMESPACE}::bigint::oid
          AND objid = (hashtext(${intent.id})::bigint & 4294967295)::oid`;
      return Number(row.n);
    });
    expect(inside).toBe(1);
  });

  it('held at session level by an idle connection (no transaction): refused at once, naming the backend without a start time', async () => {
    const intent = await makeIntent();
    const holder = await session('bridge-test:session-holder');
    await holder.query('SELECT pg_advisory_lock($1::int, hashtext($2))', [PIPELINE_LOCK_NAMESPACE, intent.id]);
    let ran = false;
    const err = await withPipelineLock(intent.id, async () => {
      ran = true;
    }).catch((e: unknown) => e);
    expect(ran).toBe(false);
    expect(err).toBeInstanceOf(LockTimeoutError);
    const details = (err as LockTimeoutError).details as { nowait: boolean; holders: { pid: number; applicationName: string; transactionStartedAt: string | null }[] };
    expect(details.nowait).toBe(true);
    expect(details.holders).toEqual([expect.objectContaining({ pid: holder.pid, applicationName: 'bridge-test:session-holder', transactionStartedAt: null })]);
    expect((err as Error).message).toContain(`backend ${holder.pid} (bridge-test:session-holder).`);
    await closeSession(holder);
    // The holder gone, the lock is free again.
    expect(await withPipelineLock(intent.id, async () => 'ran')).toBe('ran');
  });
});

describe('bridges', () => {
  it('a bridge failing with a plain Error or a thrown non-Error: each step records its text, CONTINUE runs them all', async () => {
    const intent = await makeIntent();
    const { run, intent: after } = await runPipeline({ id: intent.id, mode: 'CONTINUE' }, tester, { bridges: ['test-throws-plain', 'test-throws-string'] });
    expect(run.status).toBe('finished_with_errors');
    expect(run.steps.map((s) => [s.status, s.error])).toEqual([
      ['failed', 'plain failure'],
      ['failed', 'not an Error object'],
    ]);
    expect(run.error).toBe('test-throws-plain: plain failure; test-throws-string: not an Error object');
    expect(after.status).toBe('RECEIVED');
  });

  it('input refuses a payload with a blank key: FAILFAST fails the intent, nothing else moves it', async () => {
    const intent = await makeIntent('RECEIVED', { ' ': 1, order: 'B-1' });
    const { run, intent: after } = await runPipeline({ id: intent.id }, tester, { bridges: ['input', 'normalize'] });
    expect(run.status).toBe('failed');
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0].error).toMatch(/blank key/);
    expect(after.status).toBe('FAILED');
  });

  it('the registry refuses a malformed name, a name in use (unless replacing) and a bridge named twice in a set', () => {
    const bridge = { ...throwsPlain, name: 'Bad Name' };
    expect(() => registerBridge(bridge)).toThrow(/lower-case/);
    expect(() => registerBridge(throwsPlain)).toThrow(/already registered/);
    expect(() => resolveBridgeSet(['input', 'input'])).toThrow(UnknownBridgeError);
    expect(resolveBridgeSet(['input', 'output']).map((b) => b.name)).toEqual(['input', 'output']);
  });

  it('the canonical payload trims strings inside arrays as well as objects, and leaves other values alone', () => {
    expect(canonicalPayload({ tags: [' a ', { b: ' c ' }, 3, null], n: 1 })).toEqual({ tags: ['a', { b: 'c' }, 3, null], n: 1 });
  });
});

describe('listing runs', () => {
  it('an intent without runs lists none; an unknown intent is a NotFoundError', async () => {
    const intent = await makeIntent();
    expect(await listPipelineRuns(intent.id)).toEqual([]);
    await expect(listPipelineRuns('00000000-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a run still running has no finish time and its running step no result; a failed run lists its error and its step’s', async () => {
    const intent = await makeIntent();
    const run = started(runPipeline({ id: intent.id }, tester, { bridges: ['test-edges-holding'] }));
    await entered.wait;
    const [running] = await listPipelineRuns(intent.id);
    expect(running).toMatchObject({ status: 'running', finishedAt: null });
    expect(running).not.toHaveProperty('error');
    expect(running.steps).toEqual([expect.objectContaining({ bridge: 'test-edges-holding', status: 'running', finishedAt: null })]);
    expect(running.steps[0]).not.toHaveProperty('result');
    held.open();
    await run;

    const other = await makeIntent();
    await runPipeline({ id: other.id }, tester, { bridges: ['test-throws-plain'], failIntentOnFailure: false });
    const [failed] = await listPipelineRuns(other.id);
    expect(failed).toMatchObject({ status: 'failed', error: 'test-throws-plain: plain failure' });
    expect(failed.steps).toEqual([expect.objectContaining({ status: 'failed', error: 'plain failure' })]);
    expect(failed.steps[0]).not.toHaveProperty('result');
  });
});

describe('retry', () => {
  it('only a FAILED intent is retried; anything else is refused and left as it was', async () => {
    const intent = await makeIntent('PROCESSED');
    await expect(retryPipeline({ id: intent.id }, tester)).rejects.toBeInstanceOf(InvalidTransitionError);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: intent.version });
  });

  it('without an expected version it retries from the current one; with a lease’s fence, a stale token moves nothing and the current one runs', async () => {
    const intent = await makeIntent('FAILED', { order: 'R-1', amount: 1 });
    await db().$executeRaw`SELECT bridge_fence_grant('orders/R-1', 5)`;
    await expect(retryPipeline({ id: intent.id, fencing: { resource: 'orders/R-1', token: 4 } }, tester)).rejects.toBeInstanceOf(FencingTokenStaleError);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'FAILED', version: intent.version });

    const { intent: after, run } = await retryPipeline({ id: intent.id, fencing: { resource: 'orders/R-1', token: 5 } }, tester);
    expect(run.status).toBe('succeeded');
    expect(after.status).toBe('COMPLETED');
  });
});
