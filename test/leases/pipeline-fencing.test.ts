import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent, updateIntentStatus } from '@/lib/intents/commands';
import { FencingTokenStaleError } from '@/lib/leases/errors';
import { highestAcceptedToken } from '@/lib/leases/fencing';
import { registerBridge, unregisterBridge } from '@/lib/pipeline/bridges';
import { LostClaimError } from '@/lib/pipeline/errors';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { onClient, startRuns } from '@/lib/pipeline/repository';
import { claimFence, runPipeline } from '@/lib/pipeline/run';
import type { Bridge } from '@/lib/pipeline/types';
import { claimDueIntents, heartbeatClaims, rescueStaleClaims } from '@/lib/workers/repository';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { gate, resetEngine, started } from '../barriers';
import { intentRow, tester } from '../helpers';
import { apiRoute } from '@/lib/http/api-router';

const { POST: pipelineRoute } = apiRoute('/api/intents/{id}/pipeline');

/**
 * Fenced pipeline runs (docs/LEASES.md): a run carrying `fencing` is refused at its start when a higher token was
 * seen, and the engine refuses its bridges' writes once the lease passed on mid-run. A worker's run is fenced by its
 * claim token, so a rescued worker's late bridge write is refused by the engine even when the intent's version has
 * not moved (the version check alone would let it through).
 */
let held = gate();
let entered = gate();
/** Waits for the test mid-run, then moves the intent on (at the version it read, as every bridge does). */
const slowMover: Bridge = {
  name: 'test-fenced-mover',
  description: 'waits for the test, then moves RECEIVED → NORMALIZED',
  accepts: ['RECEIVED'],
  async run(ctx) {
    entered.open();
    await held.wait;
    await ctx.moveTo('NORMALIZED');
    return { moved: true };
  },
};

let token: string;
beforeAll(async () => {
  registerBridge(slowMover, { replace: true });
  await resetAuth();
  token = (await userWithToken(['operator'])).token;
});
afterAll(async () => {
  unregisterBridge(slowMover.name);
  await disconnectLockDb();
});
beforeEach(async () => {
  await resetEngine();
  held = gate();
  entered = gate();
});

const runCount = async (id: string) => Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pipeline_runs WHERE intent_id = ${id}::uuid`)[0].n);
const statusChanges = async (id: string) =>
  Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM audit_events WHERE intent_id = ${id}::uuid AND action = 'status_change'`)[0].n);

describe('a pipeline run carrying fencing', () => {
  it('through the API: a stale token is refused at the start with 409 fencing_token_stale, nothing recorded; a current one runs and is the fence', async () => {
    const intent = await createIntent({ payload: { order: 'F-1', amount: 5 }, source: 'test' }, tester);
    await db().$executeRaw`SELECT bridge_fence_grant('orders/F-1', 7)`;
    const post = async (body: unknown) => {
      const res = await pipelineRoute(apiRequest(`/api/intents/${intent.id}/pipeline`, { method: 'POST', token, body }), { params: Promise.resolve({ id: intent.id }) });
      return { status: res.status, body: await res.json() };
    };

    const stale = await post({ fencing: { resource: 'orders/F-1', token: 6 } });
    expect(stale.status).toBe(409);
    expect(stale.body.error).toMatchObject({ code: 'fencing_token_stale', details: { resource: 'orders/F-1', token: 6, highestAccepted: 7 } });
    expect(await runCount(intent.id)).toBe(0);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'RECEIVED', version: 0 });

    // A token never granted moves nothing either.
    const forged = await post({ fencing: { resource: 'orders/F-1', token: 8 } });
    expect(forged.status).toBe(409);
    expect(forged.body.error).toMatchObject({ code: 'fencing_token_stale', details: { resource: 'orders/F-1', token: 8, highestAccepted: 7 } });
    expect(await runCount(intent.id)).toBe(0);
    expect(await highestAcceptedToken('orders/F-1')).toBe(7);

    const current = await post({ mode: 'FAILFAST', fencing: { resource: 'orders/F-1', token: 7 } });
    expect(current.status).toBe(200);
    expect(current.body.intent.status).toBe('COMPLETED');
    expect(await highestAcceptedToken('orders/F-1')).toBe(7);

    // Nobody takes a lease on a worker's fence (a grant would advance it past the intent's next claims).
    const { POST: acquireRoute } = apiRoute('/api/leases/{resource}/acquire');
    const resource = `worker-claim:${intent.id}`;
    const res = await acquireRoute(apiRequest(`/api/leases/${encodeURIComponent(resource)}/acquire`, { method: 'POST', token, body: { owner: 'x', ttlMs: 1000 } }), { params: Promise.resolve({ resource }) });
    expect(res.status).toBe(400);
    expect((await res.json()).error.details.fields.map((f: { field: string }) => f.field)).toEqual(['resource']);
  });

  it('the lease passes to another holder mid-run: the bridge’s write is refused by the engine, the run stops with 409, the intent is not failed', async () => {
    const intent = await createIntent({ payload: { order: 'F-2', amount: 5 }, source: 'test' }, tester);
    await db().$executeRaw`SELECT bridge_fence_grant('orders/F-2', 3)`;
    const run = started(runPipeline({ id: intent.id, fencing: { resource: 'orders/F-2', token: 3 } }, tester, { bridges: ['test-fenced-mover', 'normalize'] }));
    await entered.wait;
    // Another holder got the lease (token 4): the fence moved past the run's token.
    await db().$executeRaw`SELECT bridge_fence_grant('orders/F-2', 4)`;
    held.open();
    const err = await run.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencingTokenStaleError);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'RECEIVED', version: 0 });
    const [row] = await db().$queryRaw<{ status: string; error: string }[]>`SELECT status, error FROM pipeline_runs WHERE intent_id = ${intent.id}::uuid`;
    expect(row.status).toBe('failed');
    expect(row.error).toMatch(/fencing_token_stale/);
  });
});

describe('a worker’s run is fenced by its claim token', () => {
  it('a rescued worker’s late bridge write is refused from the rescue on, before any other worker claims the intent', async () => {
    const intent = await createIntent({ payload: { order: 'F-4', amount: 5 }, source: 'test' }, tester);
    const [first] = await claimDueIntents(db(), { workerName: 'worker-a', limit: 1, leaseMs: 30_000, maxAttempts: 5 });
    const late = started(runPipeline({ id: intent.id }, tester, { door: 'worker', claimToken: first.claimToken, bridges: ['test-fenced-mover'] }));
    await entered.wait;
    // Worker A stalls past its lease and the rescuer takes the claim back. Nobody claims the intent again yet
    // (claiming paused, say, or every worker busy): A's token must already be refused.
    await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE intent_id = ${intent.id}::uuid`;
    expect(await rescueStaleClaims(db(), { rescuer: 'test', limit: 10 })).toHaveLength(1);

    held.open();
    expect(await late.catch((e: unknown) => e)).toBeInstanceOf(LostClaimError);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'RECEIVED', version: 0 });
    expect(await statusChanges(intent.id)).toBe(0);
    expect(await highestAcceptedToken(`worker-claim:${intent.id}`)).toBeNull();
  });

  it('an operator’s retry while a worker’s claim still runs takes the claim: the worker’s FAILED mark of a last attempt is refused, the retry stands', async () => {
    const intent = await createIntent({ payload: { order: 'F-5', amount: 5 }, source: 'test' }, tester);
    const [claim] = await claimDueIntents(db(), { workerName: 'worker-a', limit: 1, leaseMs: 30_000, maxAttempts: 5 });
    // The intent is failed and retried by an operator before worker A's run has closed (A is slow, or stalled).
    await updateIntentStatus({ id: intent.id, status: 'FAILED', reason: 'partner down' }, tester);
    await updateIntentStatus({ id: intent.id, status: 'RECEIVED', reason: 'partner is back' }, tester);
    expect(await highestAcceptedToken(claimFence(intent.id, claim.claimToken).resource)).toBeNull();

    // A's last attempt gives up and marks the intent FAILED with its claim's fence, without a version (as the worker
    // does): refused, so the retry is not undone.
    const worker = { name: 'worker-a' };
    await expect(updateIntentStatus({ id: intent.id, status: 'FAILED', reason: 'gave up' }, worker, { fencing: claimFence(intent.id, claim.claimToken) })).rejects.toBeInstanceOf(FencingTokenStaleError);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'RECEIVED', version: 2 });
    const [work] = await db().$queryRaw<{ state: string; round: number }[]>`SELECT state, round FROM intent_work WHERE intent_id = ${intent.id}::uuid`;
    expect(work).toEqual({ state: 'available', round: 2 });
  });

  it('a claim holds its fence while it runs, heartbeats included, and loses it to any statement that ends it, not only the workers’ own', async () => {
    const intent = await createIntent({ payload: { order: 'F-6', amount: 5 }, source: 'test' }, tester);
    const [claim] = await claimDueIntents(db(), { workerName: 'worker-a', limit: 1, leaseMs: 30_000, maxAttempts: 5 });
    const fence = claimFence(intent.id, claim.claimToken).resource;
    expect(await highestAcceptedToken(fence)).toBe(Number(claim.claimToken));
    expect(await heartbeatClaims(db(), { claimTokens: [claim.claimToken], leaseMs: 30_000 })).toEqual([claim.claimToken]);
    expect(await highestAcceptedToken(fence)).toBe(Number(claim.claimToken));

    // A statement no worker sends (a hand-made repair, say): the rule is the row's, so the fence goes all the same.
    await db().$executeRaw`UPDATE intent_work SET state = 'cancelled', finished_at = now() WHERE intent_id = ${intent.id}::uuid`;
    expect(await highestAcceptedToken(fence)).toBeNull();
    await expect(updateIntentStatus({ id: intent.id, status: 'FAILED', reason: 'gave up' }, { name: 'worker-a' }, { fencing: claimFence(intent.id, claim.claimToken) })).rejects.toBeInstanceOf(
      FencingTokenStaleError,
    );
  });

  it('names the claim fence alike in SQL (the claim, the ends of claims) and in TypeScript (the engine’s fencing input)', async () => {
    const id = '0b7e8a2c-5f1d-4e3a-9c6b-2d4f8e1a7b30';
    const [{ resource }] = await db().$queryRaw<{ resource: string }[]>`SELECT bridge_claim_fence_resource(${id}::uuid) AS resource`;
    expect(resource).toBe(claimFence(id, '1').resource);
  });

  it('a rescued worker’s late bridge write is refused by the engine once the next claim has started its run, though the version did not move', async () => {
    const intent = await createIntent({ payload: { order: 'F-3', amount: 5 }, source: 'test' }, tester);
    const claimArgs = (workerName: string) => ({ workerName, limit: 1, leaseMs: 30_000, maxAttempts: 5 });
    const [first] = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(first.intentId).toBe(intent.id);

    const late = started(runPipeline({ id: intent.id }, tester, { door: 'worker', claimToken: first.claimToken, bridges: ['test-fenced-mover'] }));
    await entered.wait;
    // Worker A stalls past its lease (time moved by SQL): the rescuer takes its claim back, worker B claims the
    // intent (a higher token) and starts its run. A's execution lock went with its connection in real life; B's run
    // start is the statement that matters here, so it is called as B's run calls it.
    await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE intent_id = ${intent.id}::uuid`;
    expect(await rescueStaleClaims(db(), { rescuer: 'test', limit: 10 })).toHaveLength(1);
    await db().$executeRaw`UPDATE intent_work SET run_after = now() WHERE intent_id = ${intent.id}::uuid`;
    const [second] = await claimDueIntents(db(), claimArgs('worker-b'));
    expect(Number(second.claimToken)).toBeGreaterThan(Number(first.claimToken));
    const [next] = await startRuns(onClient(db()), [{ intentId: intent.id, mode: 'FAILFAST', door: 'worker', actor: 'worker-b', claimToken: second.claimToken }]);
    expect(next.runId).not.toBeNull();
    expect(await intentRow(intent.id)).toMatchObject({ status: 'RECEIVED', version: 0 });

    // A wakes up: its bridge writes at the version it read, which is still current. The fence refuses it.
    held.open();
    expect(await late.catch((e: unknown) => e)).toBeInstanceOf(LostClaimError);
    expect(await intentRow(intent.id)).toMatchObject({ status: 'RECEIVED', version: 0 });
    expect(await statusChanges(intent.id)).toBe(0);
    expect(await highestAcceptedToken(`worker-claim:${intent.id}`)).toBe(Number(second.claimToken));
  });
});
