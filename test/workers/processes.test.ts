import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { CHECKS } from '@/lib/invariants/checks';
import { checkInvariants } from '@/lib/invariants/run';
import { createIntent } from '@/lib/intents/commands';
import { LostClaimError } from '@/lib/pipeline/errors';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { runPipeline } from '@/lib/pipeline/run';
import { onClient, startSteps } from '@/lib/pipeline/repository';
import { finishClaim, heartbeatClaims, releaseClaim, scheduleRetry } from '@/lib/workers/repository';
import { resetEngine, session } from '../barriers';
import { tester } from '../helpers';
import { GATE_LOCK_KEY } from './bridges.fixture';
import { workersPerTest } from './spawn';
import { eventually } from '../wait';

/**
 * Workers as separate processes (`node --import tsx scripts/worker.ts`) against one database: K workers over M intents process
 * each exactly once (checked from the step records), and a worker killed with SIGKILL mid-run has its claim
 * rescued (time moved by SQL, not by sleeping) and finished by another, with no step done twice and the dead
 * worker's token refused.
 */
const start = workersPerTest();

beforeEach(resetEngine);
afterAll(disconnectLockDb);

const workRows = () =>
  db().$queryRaw<{ intentId: string; state: string; attempt: number; claimToken: string | null; claimedBy: string | null; lastError: string | null }[]>`
    SELECT intent_id::text AS "intentId", state, attempt, claim_token::text AS "claimToken", claimed_by AS "claimedBy", last_error AS "lastError" FROM intent_work ORDER BY intent_id`;

describe('K workers × M intents (separate processes)', () => {
  it('3 workers, 40 intents: every intent processed exactly once, no double claim, no step run twice', async () => {
    const M = 40;
    const ids: string[] = [];
    for (let i = 0; i < M; i++) ids.push((await createIntent({ payload: { order: `K-${i}`, amount: i }, source: 'test' }, tester)).id);
    const workers = [0, 1, 2].map(() => start({ WORKER_CONCURRENCY: '4', WORKER_BATCH_SIZE: '5' }));
    await eventually('all intents completed', async () => {
      const rows = await workRows();
      return rows.length === M && rows.every((r) => r.state === 'completed');
    }, { timeoutMs: 200_000 });

    const runs = await db().$queryRaw<{ intentId: string; n: bigint; statuses: string[] }[]>`
      SELECT intent_id::text AS "intentId", count(*) AS n, array_agg(status) AS statuses FROM pipeline_runs GROUP BY intent_id`;
    expect(runs).toHaveLength(M);
    for (const r of runs) expect({ id: r.intentId, n: Number(r.n), statuses: r.statuses }).toEqual({ id: r.intentId, n: 1, statuses: ['succeeded'] });
    const steps = await db().$queryRaw<{ bridge: string; status: string; n: bigint }[]>`
      SELECT bridge, status, count(*) AS n FROM pipeline_steps GROUP BY bridge, status ORDER BY bridge`;
    expect(steps.map((s) => `${s.bridge}:${s.status}:${s.n}`)).toEqual(['feedback:completed:40', 'input:completed:40', 'normalize:completed:40', 'output:completed:40']);
    const intents = await db().$queryRaw<{ status: string; version: number }[]>`SELECT status::text AS status, version FROM intents`;
    expect(intents.every((i) => i.status === 'COMPLETED' && i.version === 3)).toBe(true);
    // One claim per intent: the first attempt did it, and tokens are distinct.
    const rows = await workRows();
    expect(rows.every((r) => r.attempt === 1)).toBe(true);
    expect(new Set(rows.map((r) => r.claimToken)).size).toBe(M);

    for (const w of workers) w.child.kill('SIGTERM');
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0]);
    const registry = await db().$queryRaw<{ state: string }[]>`SELECT state FROM workers`;
    expect(registry.map((r) => r.state)).toEqual(['stopped', 'stopped', 'stopped']);
  }, 240_000); // three processes starting and working on a shared 2-core machine
});

describe('three worker processes over 400 intents, one SIGKILLed mid-run', () => {
  it('every intent completes, once: each bridge completed once per intent, each transition once, the killed worker’s claims rescued', async () => {
    const M = 400;
    await db().$executeRaw`INSERT INTO intents (id, payload, source) SELECT gen_random_uuid(), jsonb_build_object('order', 'X-' || g), 'test' FROM generate_series(1, ${M}::int) g`;
    const env = { PIPELINE_BRIDGES: 'input,test-gate,normalize,feedback,output', WORKER_CONCURRENCY: '10', WORKER_BATCH_SIZE: '10', WORKER_LEASE_MS: '60000' };
    const workers = [0, 1, 2].map(() => start(env));
    const gate = await session('bridge-test:gate');
    const waitingAtGate = async () =>
      (await gate.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1 AND objid = $1::bigint::oid`, [GATE_LOCK_KEY])).rowCount!;
    const completedBy = async () =>
      (await db().$queryRaw<{ pid: number; completed: bigint }[]>`
        SELECT k.pid, count(*) FILTER (WHERE w.state = 'completed') AS completed
        FROM intent_work w JOIN workers k ON k.name = w.claimed_by GROUP BY k.pid`).map((r) => ({ pid: r.pid, completed: Number(r.completed) }));
    const victim = workers[0];
    // Mid-run: the victim has finished some of its claims (settled in batches) when the gate closes, and the runs that
    // come after wait at it — all three workers full, ten each — with more claims fetched ahead.
    await eventually('the victim finished some of its claims', async () => (await completedBy()).some((r) => r.pid === victim.child.pid && r.completed >= 10), { timeoutMs: 200_000 });
    await gate.query('SELECT pg_advisory_lock($1::bigint)', [GATE_LOCK_KEY]);
    await eventually('all three workers full at the gate', async () => (await waitingAtGate()) === 30, { timeoutMs: 200_000 });
    const [{ name: victimName }] = await db().$queryRaw<{ name: string }[]>`SELECT name FROM workers WHERE pid = ${victim.child.pid}`;
    victim.child.kill('SIGKILL');
    await victim.exited;
    await gate.query('SELECT pg_advisory_unlock($1::bigint)', [GATE_LOCK_KEY]);
    const [{ n: lostClaims }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM intent_work WHERE claimed_by = ${victimName} AND state = 'running'`;
    expect(Number(lostClaims)).toBeGreaterThanOrEqual(10);
    // Its leases run out by the database's clock (moved by SQL): the other two rescue and finish its claims.
    await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE claimed_by = ${victimName} AND state = 'running'`;
    await eventually('every intent completed', async () => (await workRows()).every((r) => r.state === 'completed'), { timeoutMs: 300_000 });

    const rows = await workRows();
    expect(rows).toHaveLength(M);
    const intents = await db().$queryRaw<{ status: string; version: number; changes: bigint }[]>`
      SELECT i.status::text AS status, i.version, (SELECT count(*) FROM audit_events a WHERE a.intent_id = i.id AND a.action = 'status_change') AS changes FROM intents i`;
    expect(intents.filter((i) => i.status !== 'COMPLETED' || i.version !== 3 || Number(i.changes) !== 3)).toEqual([]);
    const completedSteps = await db().$queryRaw<{ n: bigint; distinct: bigint }[]>`
      SELECT count(*) AS n, count(DISTINCT (intent_id, bridge)) AS distinct FROM pipeline_steps WHERE status = 'completed'`;
    expect(completedSteps.map((r) => [Number(r.n), Number(r.distinct)])).toEqual([[M * 5, M * 5]]);
    const succeeded = await db().$queryRaw<{ n: bigint }[]>`SELECT count(DISTINCT intent_id) AS n FROM pipeline_runs WHERE status = 'succeeded'`;
    expect(Number(succeeded[0].n)).toBe(M);
    const [{ n: rescued }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM audit_events WHERE action = 'claim_rescued'`;
    expect(Number(rescued)).toBe(Number(lostClaims));
    const report = await checkInvariants(db(), { checks: CHECKS.filter((c) => c.name === 'pipeline_steps_once') });
    expect(report.violationCount).toBe(0);

    for (const w of workers.slice(1)) w.child.kill('SIGTERM');
    expect(await Promise.all(workers.slice(1).map((w) => w.exited))).toEqual([0, 0]);
    await gate.end();
  }, 600_000); // three processes on a shared 2-core machine
});

describe('a worker stopped with SIGTERM mid-run', () => {
  it('runs at most WORKER_CONCURRENCY at once, claims nothing more once told to stop, finishes what it holds, exits 0', async () => {
    const gate = await session('bridge-test:gate');
    await gate.query('SELECT pg_advisory_lock($1::bigint)', [GATE_LOCK_KEY]);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await createIntent({ payload: { order: `TERM-${i}` }, source: 'test' }, tester)).id);
    // Two slots and one claim fetched ahead: three claimed, two running, the fourth left in the queue.
    const w = start({ PIPELINE_BRIDGES: 'input,test-gate,normalize,feedback,output', WORKER_CONCURRENCY: '2', WORKER_BATCH_SIZE: '1', WORKER_SHUTDOWN_GRACE_MS: '120000' });
    const atGate = async () => (await gate.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1 AND objid = $1::bigint::oid`, [GATE_LOCK_KEY])).rowCount!;
    await eventually('two runs waiting at the gate', async () => (await atGate()) === 2, { timeoutMs: 90_000 });
    // The concurrency bound: two running at the gate, one claimed ahead and waiting for a slot, one not even claimed.
    const states = (rows: Awaited<ReturnType<typeof workRows>>) => rows.map((r) => r.state).sort();
    await eventually('the claim fetched ahead', async () => states(await workRows()).join() === 'available,running,running,running');
    expect(await atGate()).toBe(2);

    w.child.kill('SIGTERM');
    await eventually('the worker registered as stopping', async () => {
      const [row] = await db().$queryRaw<{ state: string }[]>`SELECT state FROM workers`;
      return row?.state === 'stopping';
    });
    await gate.query('SELECT pg_advisory_unlock($1::bigint)', [GATE_LOCK_KEY]); // its two runs may go on now
    expect(await w.exited).toBe(0);

    const rows = await workRows();
    expect(states(rows)).toEqual(['available', 'available', 'completed', 'completed']);
    // What it had not started is left for the next worker, no attempt spent: the claim fetched ahead given back at
    // once, the fourth never claimed.
    const waiting = rows.filter((x) => x.state === 'available');
    for (const r of waiting) expect(r.attempt).toBe(0);
    expect(waiting.map((r) => r.lastError ?? 'never claimed').sort()).toEqual(['never claimed', 'released by a stopping worker']);
    // The claim opened its runs: the one given back before it ran is released, run and step.
    const runs = await db().$queryRaw<{ status: string; error: string | null; steps: string[] }[]>`
      SELECT r.status, r.error, array(SELECT s.status FROM pipeline_steps s WHERE s.run_id = r.id ORDER BY s.position) AS steps
      FROM pipeline_runs r ORDER BY r.status DESC`;
    expect(runs.map((r) => `${r.status}:${r.steps.join('+')}`)).toEqual(['succeeded:completed+completed+completed+completed+completed', 'succeeded:completed+completed+completed+completed+completed', 'released:released']);
    expect(runs[2].error).toContain('given back');
    const [registry] = await db().$queryRaw<{ state: string }[]>`SELECT state FROM workers`;
    expect(registry.state).toBe('stopped');
    await gate.end();
  }, 240_000);
});

describe('a worker killed mid-run', () => {
  it('SIGKILL: the claim is rescued after its lease (moved by SQL), another worker finishes it, no step twice, the old token is refused', async () => {
    const gate = await session('bridge-test:gate');
    await gate.query('SELECT pg_advisory_lock($1::bigint)', [GATE_LOCK_KEY]);
    const intent = await createIntent({ payload: { order: 'KILL-1', amount: 1 }, source: 'test' }, tester);
    const env = { PIPELINE_BRIDGES: 'input,test-gate,normalize,feedback,output', WORKER_LEASE_MS: '60000' };

    const a = start(env);
    // Worker A (once started) is inside test-gate, holding its claim and the execution lock: a backend waits for the
    // gate's lock itself (any lock wait would not do: a heartbeat may briefly wait for the status change's row).
    await eventually(
      'worker A waiting at the gate',
      async () => (await gate.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1 AND objid = $1::bigint::oid`, [GATE_LOCK_KEY])).rowCount! > 0,
      { timeoutMs: 90_000 },
    );
    const [claimA] = await workRows();
    expect(claimA).toMatchObject({ state: 'running', attempt: 1 });
    a.child.kill('SIGKILL');
    await a.exited;
    await gate.query('SELECT pg_advisory_unlock($1::bigint)', [GATE_LOCK_KEY]); // the gate is open from now on

    // Nobody rescues it early: the lease has a minute to run.
    expect((await workRows())[0]).toMatchObject({ state: 'running', claimToken: claimA.claimToken });
    // Time moves by SQL: the lease ran out a second ago by the database's clock.
    await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second', heartbeat_at = now() - interval '61 seconds' WHERE intent_id = ${intent.id}::uuid`;

    const b = start(env);
    const done = await eventually('the intent completed by worker B', async () => {
      const [row] = await workRows();
      return row.state === 'completed' ? row : undefined;
    });
    expect(done.attempt).toBe(2);
    expect(done.claimToken).not.toBe(claimA.claimToken);
    expect(done.claimedBy).not.toBe(claimA.claimedBy);

    const steps = await db().$queryRaw<{ bridge: string; status: string; run: string }[]>`
      SELECT s.bridge, s.status, r.status AS run FROM pipeline_steps s JOIN pipeline_runs r ON r.id = s.run_id ORDER BY s.id`;
    expect(steps.map((s) => `${s.run}/${s.bridge}:${s.status}`)).toEqual([
      'abandoned/input:completed',
      'abandoned/test-gate:abandoned',
      'succeeded/input:replayed',
      'succeeded/test-gate:completed',
      'succeeded/normalize:completed',
      'succeeded/feedback:completed',
      'succeeded/output:completed',
    ]);
    const [row] = await db().$queryRaw<{ status: string; version: number }[]>`SELECT status::text AS status, version FROM intents WHERE id = ${intent.id}::uuid`;
    expect(row).toEqual({ status: 'COMPLETED', version: 3 }); // NORMALIZED, PROCESSED, COMPLETED: once each
    const audit = await db().$queryRaw<{ action: string }[]>`SELECT action FROM audit_events WHERE intent_id = ${intent.id}::uuid AND action = 'claim_rescued'`;
    expect(audit).toHaveLength(1);

    // The killed worker's late writes, with its old claim token: every one refused, nothing changed.
    const old = { intentId: intent.id, claimToken: claimA.claimToken! };
    expect(await heartbeatClaims(db(), { claimTokens: [old.claimToken], leaseMs: 60_000 })).toEqual([]);
    expect(await finishClaim(db(), { ...old, state: 'failed', error: 'late' })).toBe(false);
    expect(await scheduleRetry(db(), { ...old, delayMs: 0, error: 'late' })).toBe(false);
    expect(await releaseClaim(db(), { ...old, delayMs: 0, reason: 'late' })).toBe(false);
    const [lateStep] = await startSteps(onClient(db()), [{ intentId: intent.id, runId: '00000000-0000-4000-8000-000000000000', round: 1, position: 9, bridge: 'input', accepts: ['RECEIVED'], replayed: undefined, actor: 'late', claimToken: old.claimToken }]);
    expect(lateStep.stepId).toBeNull();
    expect(await runPipeline({ id: intent.id }, tester, { claimToken: old.claimToken }).catch((e) => e)).toBeInstanceOf(Error);
    expect((await workRows())[0]).toMatchObject({ state: 'completed', claimToken: done.claimToken });

    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
    await gate.end();
  }, 240_000);

  it('a run with a lost claim stops without writing', async () => {
    const intent = await createIntent({ payload: { order: 'LOST-1' }, source: 'test' }, tester);
    const err = await runPipeline({ id: intent.id }, tester, { claimToken: '999999' }).catch((e) => e);
    expect(err).toBeInstanceOf(LostClaimError);
    expect(Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pipeline_runs`)[0].n)).toBe(0);
  });
});
