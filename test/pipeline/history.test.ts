import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { updateIntentStatus } from '@/lib/intents/commands';
import { registerBridge, unregisterBridge } from '@/lib/pipeline/bridges';
import { BridgeError } from '@/lib/pipeline/errors';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { runPipeline } from '@/lib/pipeline/run';
import type { Bridge } from '@/lib/pipeline/types';
import { resetEngine } from '../barriers';
import { makeIntent, tester } from '../helpers';
import { api, signInApiCaller } from '../api/route-client';

/**
 * Why an intent failed, as GET /api/intents/:id/pipeline tells it: every run is an attempt (numbered within its
 * round) with each step's error, and a FAILED intent's answer carries the status change that failed it.
 */
let answer = 'first';
const ledger: Bridge = {
  name: 'test-ledger',
  description: 'fails with the current answer',
  accepts: ['PROCESSED'],
  async run() {
    throw new BridgeError(answer);
  },
};
const bridges = ['input', 'normalize', 'test-ledger'];

beforeAll(async () => {
  registerBridge(ledger, { replace: true });
  await signInApiCaller();
});
afterAll(async () => {
  unregisterBridge(ledger.name);
  await disconnectLockDb();
});
beforeEach(resetEngine);

describe('GET /api/intents/:id/pipeline', () => {
  it('numbers the attempts of a round and gives each failed step’s error; a FAILED intent says who failed it and why', async () => {
    const intent = await makeIntent('RECEIVED');
    for (const [n, text] of ['ledger timed out', 'ledger answered 503', 'account closed'].entries()) {
      answer = text;
      await runPipeline({ id: intent.id }, tester, { bridges, failIntentOnFailure: n === 2 });
    }
    const res = await api.pipelineRuns(intent.id);
    expect(res.status).toBe(200);
    const { runs, failure } = res.body;
    expect(runs.map((r: { attempt: number; round: number }) => [r.round, r.attempt])).toEqual([
      [1, 3],
      [1, 2],
      [1, 1],
    ]);
    const failedStep = (i: number) => runs[i].steps.find((s: { status: string }) => s.status === 'failed');
    expect(failedStep(2)).toMatchObject({ bridge: 'test-ledger', error: 'bridge_failed: ledger timed out' });
    expect(failedStep(0)).toMatchObject({ bridge: 'test-ledger', error: 'bridge_failed: account closed' });
    expect(failedStep(0).finishedAt).toEqual(expect.any(String));
    // The later attempts replay what the first one finished.
    expect(runs[0].steps.map((s: { status: string }) => s.status)).toEqual(['replayed', 'replayed', 'failed']);
    expect(failure).toMatchObject({ actor: tester.name, from: 'PROCESSED', version: 3 });
    expect(failure.reason).toBe('pipeline: test-ledger failed: bridge_failed: account closed');
  });

  it('a FAILED intent marked by hand carries the operator’s reason; once moved back, no failure and a new round', async () => {
    const intent = await makeIntent('NORMALIZED');
    await updateIntentStatus({ id: intent.id, status: 'FAILED', reason: 'partner withdrew the order' }, { name: 'ops.anna' });
    let res = await api.pipelineRuns(intent.id);
    expect(res.body).toMatchObject({ runs: [], failure: { actor: 'ops.anna', from: 'NORMALIZED', reason: 'partner withdrew the order' } });

    await updateIntentStatus({ id: intent.id, status: 'RECEIVED' }, tester);
    answer = 'still closed';
    await runPipeline({ id: intent.id }, tester, { bridges, failIntentOnFailure: false });
    res = await api.pipelineRuns(intent.id);
    expect(res.body.failure).toBeNull();
    expect(res.body.runs).toMatchObject([{ round: 2, attempt: 1, status: 'failed', error: 'test-ledger: bridge_failed: still closed' }]);
  });

  it('answers 404 for an unknown intent', async () => {
    expect((await api.pipelineRuns('00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });
});
