import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent, updateIntentStatus } from '@/lib/intents/commands';
import { registerBridge, unregisterBridge } from '@/lib/pipeline/bridges';
import { BridgeError } from '@/lib/pipeline/errors';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import type { Bridge } from '@/lib/pipeline/types';
import { workerConfig, type WorkerConfig } from '@/lib/workers/config';
import { getWorkersOverview } from '@/lib/workers/queries';
import { claimDueIntents, finishClaim, heartbeatClaims, rescueStaleClaims, type Claim } from '@/lib/workers/repository';
import { Worker } from '@/lib/workers/worker';
import { gate, lockWaiters, resetEngine, session, started, type Session } from '../barriers';
import { tester } from '../helpers';
import { onSession } from './session-client';
import { eventually } from '../wait';

/**
 * The work queue's statements under forced interleavings of two sessions (as Postgres' isolation tests do for
 * SKIP LOCKED), the retry schedule and the maximum, terminal intents, pausing, the exhausted claim after a rescue,
 * and a graceful stop — in this process, with time moved by SQL.
 */
const failing: Bridge = {
  name: 'test-always-fails',
  description: 'always fails',
  accepts: ['NORMALIZED'],
  async run() {
    throw new BridgeError('Test failure');
  },
};
let held = gate();
let entered = gate();
const holding: Bridge = {
  name: 'test-hold',
  description: 'waits for the test',
  accepts: ['RECEIVED'],
  async run(ctx) {
    entered.open();
    // A long bridge that listens for its worker stopping, as a well-behaved one does.
    await Promise.race([held.wait, new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))]);
  },
};

beforeAll(() => {
  registerBridge(failing, { replace: true });
  registerBridge(holding, { replace: true });
});
afterAll(async () => {
  unregisterBridge(failing.name);
  unregisterBridge(holding.name);
  await disconnectLockDb();
});
beforeEach(async () => {
  await resetEngine();
  held = gate();
  entered = gate();
});

const claimArgs = (workerName: string, limit = 4) => ({ workerName, limit, leaseMs: 30_000, maxAttempts: 5 });
const newIntents = async (n: number) => {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await createIntent({ payload: { order: `C-${i}` }, source: 'test' }, tester)).id);
  return ids.sort();
};
const work = async (id: string) =>
  (
    await db().$queryRaw<{ state: string; attempt: number; lastError: string | null; dueInMs: number }[]>`
      SELECT state, attempt, last_error AS "lastError", (extract(epoch FROM run_after - now()) * 1000)::float8 AS "dueInMs"
      FROM intent_work WHERE intent_id = ${id}::uuid`
  )[0];

type Step = { session: 0 | 1; sql: 'claim' | 'commit' | 'rollback' };

describe('the claim statement under every interleaving of two sessions', () => {
  // Each session: BEGIN, claim up to 4, end. All orders of the two sessions' steps (each in its own order).
  const orders: Step[][] = [
    [{ session: 0, sql: 'claim' }, { session: 0, sql: 'commit' }, { session: 1, sql: 'claim' }, { session: 1, sql: 'commit' }],
    [{ session: 0, sql: 'claim' }, { session: 1, sql: 'claim' }, { session: 0, sql: 'commit' }, { session: 1, sql: 'commit' }],
    [{ session: 0, sql: 'claim' }, { session: 1, sql: 'claim' }, { session: 1, sql: 'commit' }, { session: 0, sql: 'commit' }],
    [{ session: 1, sql: 'claim' }, { session: 0, sql: 'claim' }, { session: 0, sql: 'commit' }, { session: 1, sql: 'commit' }],
    [{ session: 1, sql: 'claim' }, { session: 0, sql: 'claim' }, { session: 1, sql: 'commit' }, { session: 0, sql: 'commit' }],
    [{ session: 1, sql: 'claim' }, { session: 1, sql: 'commit' }, { session: 0, sql: 'claim' }, { session: 0, sql: 'commit' }],
  ];
  let sessions: Session[] = [];
  beforeAll(async () => {
    sessions = [await session('bridge-test:s1'), await session('bridge-test:s2')];
  });

  it.each(orders.map((o) => ({ order: o.map((s) => `${s.sql}${s.session + 1}`).join(' '), steps: o })))('$order: disjoint claims, every due row claimed once', async ({ steps }) => {
    const ids = await newIntents(6);
    const claimed: Claim[][] = [[], []];
    for (const s of sessions) await s.query('BEGIN');
    for (const step of steps) {
      const s = sessions[step.session];
      if (step.sql === 'claim') claimed[step.session] = await claimDueIntents(onSession(s), claimArgs(`w${step.session + 1}`));
      else await s.query(step.sql.toUpperCase());
    }
    const all = [...claimed[0], ...claimed[1]].map((c) => c.intentId).sort();
    expect(all).toEqual(ids); // nobody claimed twice, nothing left behind (4 + 2 in either order)
    expect(claimed.map((c) => c.length).sort()).toEqual([2, 4]);
    expect(new Set([...claimed[0], ...claimed[1]].map((c) => c.claimToken)).size).toBe(6);
  });

  it('a claim holds the execution locks of the intents it claimed and of no others, whatever plan the database picks', async () => {
    await newIntents(6);
    const [s1, s2] = sessions;
    await s1.query('BEGIN');
    // The plan a large or freshly analysed queue gets: the whole queue scanned and joined by hashing, not row by row.
    await s1.query('SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_nestloop = off; SET LOCAL enable_mergejoin = off');
    const mine = await claimDueIntents(onSession(s1), claimArgs('w1', 2));
    expect(mine).toHaveLength(2);
    const { rows } = await s2.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1`, [s1.pid]);
    expect(rows[0].n).toBe(2);
    await s2.query('BEGIN');
    expect(await claimDueIntents(onSession(s2), claimArgs('w2'))).toHaveLength(4);
    await s2.query('COMMIT');
    await s1.query('COMMIT');
  });

  it('an intent whose row someone holds FOR UPDATE is left for a later claim; the others are claimed at once, their runs recorded', async () => {
    const ids = await newIntents(3);
    const [s1, s2] = sessions;
    // A person's psql session, left open on one of them.
    await s2.query('BEGIN');
    await s2.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [ids[0]]);
    await s1.query('BEGIN');
    // Were the claim to wait for that row, this says so (55P03) instead of hanging the test.
    await s1.query(`SET LOCAL lock_timeout = '5s'`);
    const open = { mode: 'FAILFAST', door: 'worker', actor: 'worker:w1', bridge: 'input', accepts: ['RECEIVED'], record: true } as const;
    const claims = await claimDueIntents(onSession(s1), { ...claimArgs('w1'), open });
    await s1.query('COMMIT');
    expect(claims.map((c) => c.intentId).sort()).toEqual(ids.slice(1));
    const runs = await db().$queryRaw<{ intentId: string }[]>`SELECT intent_id::text AS "intentId" FROM pipeline_runs ORDER BY intent_id`;
    expect(runs.map((r) => r.intentId)).toEqual(ids.slice(1));
    expect((await work(ids[0])).state).toBe('available');
    // Let go, it is claimed like any other.
    await s2.query('COMMIT');
    expect((await claimDueIntents(db(), claimArgs('w2'))).map((c) => c.intentId)).toEqual([ids[0]]);
  });

  it('claim1 rollback1 claim2: a claim that rolls back leaves its rows to the next', async () => {
    const ids = await newIntents(3);
    const [s1, s2] = sessions;
    await s1.query('BEGIN');
    expect(await claimDueIntents(onSession(s1), claimArgs('w1'))).toHaveLength(3);
    await s1.query('ROLLBACK');
    await s2.query('BEGIN');
    expect((await claimDueIntents(onSession(s2), claimArgs('w2'))).map((c) => c.intentId).sort()).toEqual(ids);
    await s2.query('COMMIT');
  });

  it('a claim takes a positive whole number of rows: its LIMIT is written into the statement, so nothing else is', async () => {
    await newIntents(1);
    for (const limit of [0, -1, 2.5, Number.NaN]) {
      await expect(claimDueIntents(db(), claimArgs('w1', limit))).rejects.toThrow(RangeError);
    }
    // Nothing was claimed by the refused calls.
    expect(await claimDueIntents(db(), claimArgs('w1', 1))).toHaveLength(1);
  });
});

describe('a late finish against the rescuer (River #1302): whoever commits first wins, the other changes nothing', () => {
  type Op = 'finish' | 'rescue';
  // [first statement, then the order of the commits]; a finish that meets the rescuer's uncommitted rescue waits for it.
  const cases: { name: string; steps: (`${Op}` | `commit-${Op}`)[]; winner: Op }[] = [
    { name: 'finish, commit, rescue, commit', steps: ['finish', 'commit-finish', 'rescue', 'commit-rescue'], winner: 'finish' },
    { name: 'rescue, commit, finish, commit', steps: ['rescue', 'commit-rescue', 'finish', 'commit-finish'], winner: 'rescue' },
    { name: 'finish, rescue (skips the locked row), commit finish, commit rescue', steps: ['finish', 'rescue', 'commit-finish', 'commit-rescue'], winner: 'finish' },
    { name: 'finish, rescue (skips the locked row), commit rescue, commit finish', steps: ['finish', 'rescue', 'commit-rescue', 'commit-finish'], winner: 'finish' },
    { name: 'rescue, finish (waits for the rescue), commit rescue, commit finish', steps: ['rescue', 'finish', 'commit-rescue', 'commit-finish'], winner: 'rescue' },
  ];

  it.each(cases)('$name → $winner', async ({ steps, winner }) => {
    const [id] = await newIntents(1);
    const [claim] = await claimDueIntents(db(), claimArgs('w1'));
    // The lease ran out by the database's clock (moved by SQL): the claim is rescuable, yet its worker finishes late.
    await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE intent_id = ${id}::uuid`;
    const worker = await session('bridge-test:finisher');
    const rescuer = await session('bridge-test:rescuer');
    await worker.query('BEGIN');
    await rescuer.query('BEGIN');
    let finished: Promise<boolean> | undefined;
    let rescued: unknown[] | undefined;
    for (const step of steps) {
      if (step === 'finish') {
        finished = started(finishClaim(onSession(worker), { intentId: id, claimToken: claim.claimToken, state: 'completed', error: null }));
        // It either returns at once or waits for the rescuer's row lock: know which before going on.
        let settled = false;
        void finished.finally(() => (settled = true));
        await eventually('the worker to wait on the lock (or finish)', async () => settled || (await lockWaiters({ pids: [worker.pid] })) > 0, { everyMs: 3 });
      } else if (step === 'rescue') {
        rescued = await rescueStaleClaims(onSession(rescuer), { rescuer: 'test', limit: 10 }).then((r) => r as unknown[]);
      } else if (step === 'commit-finish') {
        await finished;
        await worker.query('COMMIT');
      } else {
        await rescuer.query('COMMIT');
      }
    }
    const [didFinish, didRescue] = [await finished!, rescued!.length === 1];
    expect({ didFinish, didRescue }).toEqual({ didFinish: winner === 'finish', didRescue: winner === 'rescue' });
    expect((await work(id)).state).toBe(winner === 'finish' ? 'completed' : 'retryable');
    await worker.end();
    await rescuer.end();
  });
});

describe('retries, the maximum, terminal intents', () => {
  const config = (o: Partial<WorkerConfig> = {}) =>
    workerConfig({ maxAttempts: 3, retry: { baseMs: 1000, jitterMs: 0, maxDelayMs: 60_000 }, bridges: ['input', 'test-always-fails'], ...o });

  it('exponential retry schedule, then FAILED with the reason after the maximum; never claimed again', async () => {
    const [id] = await newIntents(1);
    const worker = new Worker(config(), () => undefined);
    const claimOnce = async () => claimDueIntents(db(), { workerName: worker.name, limit: 10, leaseMs: 30_000, maxAttempts: 3 });
    const signal = new AbortController().signal;

    for (const [attempt, delay] of [[1, 1000], [2, 2000]] as const) {
      const [claim] = await claimOnce();
      expect(claim).toMatchObject({ intentId: id, attempt, maxAttempts: 3, exhausted: false });
      await worker.process(claim, signal);
      const row = await work(id);
      expect(row).toMatchObject({ state: 'retryable', attempt });
      expect(row.lastError).toMatch(new RegExp(`attempt ${attempt} of 3: test-always-fails: bridge_failed: Test failure`));
      expect(row.dueInMs).toBeGreaterThan(delay - 500);
      expect(row.dueInMs).toBeLessThanOrEqual(delay);
      expect(await claimOnce()).toEqual([]); // scheduled, not due
      await db().$executeRaw`UPDATE intent_work SET run_after = now() WHERE intent_id = ${id}::uuid`; // time moves by SQL
    }
    const [last] = await claimOnce();
    expect(last.attempt).toBe(3);
    await worker.process(last, signal);
    expect(await work(id)).toMatchObject({ state: 'failed', attempt: 3 });
    expect((await work(id)).lastError).toMatch(/attempt 3 of 3: test-always-fails: bridge_failed: Test failure/);
    const [intent] = await db().$queryRaw<{ status: string }[]>`SELECT status::text AS status FROM intents WHERE id = ${id}::uuid`;
    expect(intent.status).toBe('FAILED');
    await db().$executeRaw`UPDATE intent_work SET run_after = now() - interval '1 hour'`;
    expect(await claimOnce()).toEqual([]);
    // Input ran once; attempts 2 and 3 replayed it.
    const steps = await db().$queryRaw<{ bridge: string; status: string }[]>`SELECT bridge, status FROM pipeline_steps ORDER BY id`;
    expect(steps.map((s) => `${s.bridge}:${s.status}`)).toEqual([
      'input:completed', 'test-always-fails:failed', 'input:replayed', 'test-always-fails:failed', 'input:replayed', 'test-always-fails:failed',
    ]);
  });

  it('terminal intents are never claimed: settled by the trigger when waiting, by the claim statement when released', async () => {
    const [a, b] = await newIntents(2);
    await updateIntentStatus({ id: a, status: 'FAILED' }, tester); // waiting row: the trigger settles it
    expect((await work(a)).state).toBe('failed');
    const claims = await claimDueIntents(db(), claimArgs('w1'));
    expect(claims.map((c) => c.intentId)).toEqual([b]);
    await updateIntentStatus({ id: b, status: 'FAILED' }, tester); // running row: left to its worker…
    expect((await work(b)).state).toBe('running');
    await db().$executeRaw`UPDATE intent_work SET state = 'available' WHERE intent_id = ${b}::uuid`; // …who gives it back
    expect(await claimDueIntents(db(), claimArgs('w1'))).toEqual([]);
    expect((await work(b)).state).toBe('failed');
  });

  it('an intent an operator moved on from RECEIVED before any worker took it is not claimed (its row is cancelled)', async () => {
    const [id] = await newIntents(1);
    await updateIntentStatus({ id, status: 'NORMALIZED' }, tester);
    expect(await work(id)).toMatchObject({ state: 'cancelled' });
    expect(await claimDueIntents(db(), claimArgs('w1'))).toEqual([]);
  });

  it('an intent moved on outside the pipeline and failed later is not counted or listed among the pipeline’s failures', async () => {
    const [id] = await newIntents(1);
    await updateIntentStatus({ id, status: 'NORMALIZED' }, tester);
    await updateIntentStatus({ id, status: 'FAILED', reason: 'partner cancelled the order' }, tester);
    expect(await work(id)).toMatchObject({ state: 'cancelled' });
    const overview = await getWorkersOverview();
    expect(overview.queue.failed).toBe(0);
    expect(overview.failed.map((f) => f.intentId)).not.toContain(id);
  });

  it('the failed count is the failed list’s: an intent failed with its row queued, by another door, is in neither', async () => {
    const [id] = await newIntents(1);
    // Back to RECEIVED (queued for its next round), then FAILED again before any worker took it — as an operator's
    // own run of the pipeline leaves it when it fails.
    await updateIntentStatus({ id, status: 'FAILED' }, tester);
    await updateIntentStatus({ id, status: 'RECEIVED' }, tester);
    await updateIntentStatus({ id, status: 'FAILED', reason: 'input refused the payload' }, tester);
    expect(await work(id)).toMatchObject({ state: 'failed' });
    const overview = await getWorkersOverview();
    expect(overview.failed.map((f) => f.intentId)).not.toContain(id);
    expect(overview.queue.failed).toBe(overview.failed.length);
  });

  it('an operator’s retry of a FAILED intent queues its next round', async () => {
    const [id] = await newIntents(1);
    await updateIntentStatus({ id, status: 'FAILED' }, tester);
    await updateIntentStatus({ id, status: 'RECEIVED' }, tester);
    const [claim] = await claimDueIntents(db(), claimArgs('w1'));
    expect(claim).toMatchObject({ intentId: id, round: 2, attempt: 1 });
  });

  it('pause stops every worker’s claims; resume lets them claim again', async () => {
    await newIntents(2);
    await db().$executeRaw`UPDATE worker_control SET paused = true`;
    expect(await claimDueIntents(db(), claimArgs('w1'))).toEqual([]);
    await db().$executeRaw`UPDATE worker_control SET paused = false`;
    expect(await claimDueIntents(db(), claimArgs('w1'))).toHaveLength(2);
  });

  it('a claim rescued on its last attempt is claimed once more only to fail the intent with the reason', async () => {
    const [id] = await newIntents(1);
    const [claim] = await claimDueIntents(db(), { workerName: 'w-dead', limit: 1, leaseMs: 30_000, maxAttempts: 1 });
    expect(claim.attempt).toBe(1);
    await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second'`;
    expect(await rescueStaleClaims(db(), { rescuer: 'test', limit: 10 })).toHaveLength(1);
    expect(await heartbeatClaims(db(), { claimTokens: [claim.claimToken], leaseMs: 1000 })).toEqual([]);
    const [again] = await claimDueIntents(db(), claimArgs('w2'));
    expect(again).toMatchObject({ exhausted: true, attempt: 1 });
    await new Worker(config({ maxAttempts: 1 }), () => undefined).process(again, new AbortController().signal);
    expect(await work(id)).toMatchObject({ state: 'failed' });
    expect((await work(id)).lastError).toMatch(/gave up after 1 attempts: claim \d+ of w-dead expired/);
    const [intent] = await db().$queryRaw<{ status: string }[]>`SELECT status::text AS status FROM intents WHERE id = ${id}::uuid`;
    expect(intent.status).toBe('FAILED');
  });
});

describe('a graceful stop', () => {
  it('stop(): the run in flight stops after its current bridge and its claim is released, attempt not counted', async () => {
    const [id] = await newIntents(1);
    // After the grace period, stop() waits for the aborted runs up to the larger of 1 s and a heartbeat: a long
    // heartbeat here makes that a bound a loaded machine cannot reach, not a race with it.
    const worker = new Worker(workerConfig({ pollMs: 20, heartbeatMs: 30_000, rescueMs: 1000, shutdownGraceMs: 0, bridges: ['test-hold', 'input'] }), () => undefined);
    await worker.start();
    await entered.wait;
    // No grace: the run is told to stop at once; its bridge returns, and the run stops before Input.
    await worker.stop();
    expect(await work(id)).toMatchObject({ state: 'available', attempt: 0 });
    const runs = await db().$queryRaw<{ status: string }[]>`SELECT status FROM pipeline_runs`;
    expect(runs.map((r) => r.status)).toEqual(['interrupted']);
    const [me] = await db().$queryRaw<{ state: string; inFlight: number }[]>`SELECT state, in_flight AS "inFlight" FROM workers`;
    expect(me).toEqual({ state: 'stopped', inFlight: 0 });
  });
});
