import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent, updateIntentStatus } from '@/lib/intents/commands';
import { CHECKS } from '@/lib/invariants/checks';
import { checkInvariants } from '@/lib/invariants/run';
import { pipelineHistory } from '@/lib/pipeline/history';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { onClient, recordOpenedRuns } from '@/lib/pipeline/repository';
import {
  claimDueIntents,
  closeRunsAndClaims,
  recordRunsAndEndClaims,
  releaseClaim,
  rescueStaleClaims,
  type Claim,
  type ClaimEnd,
  type OpenOnClaim,
  type RunCloseAndClaimEnd,
} from '@/lib/workers/repository';
import { gate, lockWaiters, resetEngine, session, started } from '../barriers';
import { registerBridge, unregisterBridge } from '@/lib/pipeline/bridges';
import { workerConfig } from '@/lib/workers/config';
import { Worker } from '@/lib/workers/worker';
import { tester } from '../helpers';
import { onSession } from './session-client';
import { eventually } from '../wait';

/**
 * The worker's folded statements: the claim that opens each run and its first step without recording them, the run's
 * first write that records them, and the close that ends the last step, the run and the claim at once — recording the
 * run whole when nothing recorded it before. Each item stays all or nothing on its claim token: a rescued worker's
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

/**
 * How a claim's one-bridge run is closed: `recorded` when its run was recorded at its first write before the close
 * (recordOpenedRuns, as a bridge's first command does), `whole` when nothing recorded it and the close records it whole.
 */
type CloseKind = 'recorded' | 'whole';

/** Records the runs the claims opened (the run's first write, recordOpenedRuns); their first steps' ids. */
async function record(claims: Claim[]): Promise<(string | null)[]> {
  return recordOpenedRuns(onClient(db()), claims.map((c) => c.opened!.pending!));
}

/** The close of a claim's one-bridge run: its step completed, the run succeeded, the claim ended as `claimEnd` says. */
function closeOf(c: Claim, stepId: string | null, claimEnd: ClaimEnd = completed): RunCloseAndClaimEnd {
  const runId = c.opened!.run.runId!;
  return {
    intentId: c.intentId,
    claimToken: c.claimToken,
    runId,
    status: 'succeeded',
    error: null,
    actor,
    stepEnd: { intentId: c.intentId, claimToken: c.claimToken, runId, stepId, bridge: 'input', status: 'completed', result: { ok: true }, error: null, actor },
    claimEnd,
    ...(stepId === null ? { opening: c.opened!.pending } : {}),
  };
}

/** Prepares `claims` for a close of `kind` (records their runs for `recorded`), and returns the close. */
async function closer(kind: CloseKind, claims: Claim[]): Promise<(client: Parameters<typeof onClient>[0], ends?: ClaimEnd[]) => Promise<unknown[]>> {
  const stepIds = kind === 'recorded' ? await record(claims) : claims.map(() => null);
  return (client, ends) => (kind === 'recorded' ? closeRunsAndClaims : recordRunsAndEndClaims)(onClient(client), claims.map((c, i) => closeOf(c, stepIds[i], ends?.[i])));
}

/** The claims' leases run out (by SQL) and the rescuer takes them back. */
async function rescue(lost: Claim[]): Promise<void> {
  await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE claim_token = ANY(${lost.map((c) => c.claimToken)}::bigint[])`;
  expect(await rescueStaleClaims(db(), { rescuer: 'test', limit: 100 })).toHaveLength(lost.length);
}

const runsRecorded = () => count`SELECT count(*) AS n FROM pipeline_runs`;

describe('the claim opens each run and its first step, and records neither', () => {
  it('one statement names each run and decides how its first step starts; the console reads the running run from the claim', async () => {
    const ids = await newIntents(3);
    // The worker named as its actor says (`worker:<name>`): the console names the run's actor from the claim.
    const claims = await claimDueIntents(db(), claimArgs('folded'));
    expect(claims.map((c) => c.intentId)).toEqual(ids);
    const named = await db().$queryRaw<{ intentId: string; runId: string }[]>`SELECT intent_id::text AS "intentId", run_id::text AS "runId" FROM intent_work ORDER BY intent_id`;
    for (const [i, c] of claims.entries()) {
      expect(c.opened?.run).toMatchObject({ claimHeld: true, claimedBy: null, intentStatus: 'RECEIVED', round: 1, recorded: {}, runId: named[i].runId });
      expect(c.opened?.firstStep).toMatchObject({ stepId: null, stepStatus: 'running', status: 'RECEIVED', version: 0, finishedAt: null });
      expect(c.opened?.pending).toMatchObject({ runId: named[i].runId, kind: 'running', bridge: 'input', mode: 'FAILFAST', door: 'worker', actor, intentStatus: 'RECEIVED', version: 0 });
    }
    expect(await runsRecorded()).toBe(0);
    expect(await count`SELECT count(*) AS n FROM audit_events WHERE action IN ('pipeline_started', 'bridge_started')`).toBe(0);
    const { runs } = await pipelineHistory(ids[0]);
    expect(runs).toEqual([expect.objectContaining({ id: named[0].runId, attempt: 1, status: 'running', door: 'worker', actor, mode: 'FAILFAST', steps: [] })]);
    expect(runs[0].startedAt).toBe(claims[0].opened!.run.startedAt!.toISOString());
  });

  it('recorded at the run’s first write: the run and its running first step, audited at the time they started, in order', async () => {
    const ids = await newIntents(3);
    const claims = await claimDueIntents(db(), claimArgs('worker-a'));
    const stepIds = await record(claims);
    expect(stepIds.every((s) => s !== null)).toBe(true);
    const rows = await db().$queryRaw<{ intentId: string; actions: string[]; at: Date[] }[]>`
      SELECT intent_id::text AS "intentId", array_agg(action ORDER BY write_seq) AS actions, array_agg(at ORDER BY write_seq) AS at FROM audit_events
      WHERE action IN ('pipeline_started', 'bridge_started') GROUP BY intent_id ORDER BY intent_id`;
    expect(rows.map((r) => ({ intentId: r.intentId, actions: r.actions }))).toEqual(ids.map((intentId) => ({ intentId, actions: ['pipeline_started', 'bridge_started'] })));
    for (const [i, r] of rows.entries()) expect(r.at.map((t) => t.toISOString())).toEqual([0, 1].map(() => claims[i].opened!.run.startedAt!.toISOString()));
    expect(await count`SELECT count(*) AS n FROM pipeline_runs WHERE status = 'running' AND claim_token IS NOT NULL`).toBe(3);
    // Recorded once: the console now reads the recorded run, not the claim.
    expect((await pipelineHistory(ids[0])).runs.map((r) => [r.id, r.status, r.steps.map((s) => s.status)])).toEqual([[claims[0].opened!.run.runId, 'running', ['running']]]);
  });

  it('with `record` (a BridgeSet of several bridges, whose runs write before their second bridge anyway), the claim records them itself', async () => {
    const ids = await newIntents(2);
    const claims = await claimDueIntents(db(), { ...claimArgs('worker-a'), open: { ...open, record: true } });
    for (const c of claims) {
      expect(c.opened?.pending).toBeUndefined();
      expect(c.opened?.firstStep).toMatchObject({ stepStatus: 'running', finishedAt: null });
      expect(c.opened?.firstStep.stepId).not.toBeNull();
    }
    const rows = await db().$queryRaw<{ intentId: string; actions: string[] }[]>`
      SELECT intent_id::text AS "intentId", array_agg(action ORDER BY write_seq) AS actions FROM audit_events
      WHERE action IN ('pipeline_started', 'bridge_started') GROUP BY intent_id ORDER BY intent_id`;
    expect(rows).toEqual(ids.map((intentId) => ({ intentId, actions: ['pipeline_started', 'bridge_started'] })));
    const runs = await db().$queryRaw<{ id: string; status: string }[]>`SELECT id::text AS id, status FROM pipeline_runs ORDER BY intent_id`;
    expect(runs).toEqual(claims.map((c) => ({ id: c.opened!.run.runId, status: 'running' })));
  });

  it('a step this round completed already is opened as replayed, with its recorded result', async () => {
    const [id] = await newIntents(1);
    const [first] = await claimDueIntents(db(), claimArgs('worker-a'));
    await record([first]);
    // The first attempt recorded the bridge's result and then its worker died: the next claim replays it.
    await db().$executeRaw`UPDATE pipeline_steps SET status = 'completed', finished_at = now(), result = '{"kept":1}' WHERE claim_token = ${first.claimToken}::bigint`;
    await rescue([first]);
    const [second] = await claimDueIntents(db(), claimArgs('worker-b'));
    expect(second.intentId).toBe(id);
    expect(second.opened?.run.recorded).toEqual({ input: { kept: 1 } });
    expect(second.opened?.firstStep.stepStatus).toBe('replayed');
    expect(second.opened?.pending).toMatchObject({ kind: 'replayed', recorded: { kept: 1 } });
    // A step that does not run ends as it starts: recorded at once, with the recorded result.
    expect(await record([second])).toHaveLength(1);
    const [step] = await db().$queryRaw<{ status: string; result: unknown }[]>`SELECT status, result FROM pipeline_steps WHERE claim_token = ${second.claimToken}::bigint`;
    expect(step).toEqual({ status: 'replayed', result: { kept: 1 } });
  });

  it('a claim given back before its run started leaves nothing recorded: no attempt, not in the runs, no event out', async () => {
    await newIntents(1);
    const [claim] = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(await releaseClaim(db(), { intentId: claim.intentId, claimToken: claim.claimToken, delayMs: 0, reason: 'released by a stopping worker' })).toBe(true);
    expect(await runsRecorded()).toBe(0);
    const [work] = await db().$queryRaw<{ state: string; attempt: number }[]>`SELECT state, attempt FROM intent_work`;
    expect(work).toEqual({ state: 'available', attempt: 0 });
    expect(await count`SELECT count(*) AS n FROM audit_events WHERE action LIKE 'pipeline_%' OR action LIKE 'bridge_%'`).toBe(0);
    expect(await count`SELECT count(*) AS n FROM outbox_events WHERE subject = 'evt.intent.pipeline_finished'`).toBe(0);
    // The runs panel and the rerun's plan see no attempt; the next claim's run is attempt 1 of the round.
    expect((await pipelineHistory(claim.intentId)).runs).toEqual([]);
    const [next] = await claimDueIntents(db(), claimArgs('worker-b'));
    expect(next.intentId).toBe(claim.intentId);
    expect((await pipelineHistory(claim.intentId)).runs.map((r) => [r.attempt, r.status])).toEqual([[1, 'running']]);
  });

  it('a claim rescued before its run was recorded has the run it named recorded as abandoned, an attempt like any other', async () => {
    const [id] = await newIntents(1);
    const [claim] = await claimDueIntents(db(), claimArgs('worker-a'));
    await rescue([claim]);
    const [run] = await db().$queryRaw<{ id: string; status: string; error: string; startedAt: Date; steps: bigint }[]>`
      SELECT r.id::text AS id, r.status, r.error, r.started_at AS "startedAt", (SELECT count(*) FROM pipeline_steps s WHERE s.run_id = r.id) AS steps FROM pipeline_runs r`;
    expect(run).toMatchObject({ id: claim.opened!.run.runId, status: 'abandoned', steps: 0n });
    expect(run.error).toContain('before anything of the run was recorded');
    expect(run.startedAt.toISOString()).toBe(claim.opened!.run.startedAt!.toISOString());
    const [next] = await claimDueIntents(db(), claimArgs('worker-b'));
    expect(next.intentId).toBe(id);
    expect((await pipelineHistory(id)).runs.map((r) => [r.attempt, r.status])).toEqual([[2, 'running'], [1, 'abandoned']]);
  });
});

describe.each<CloseKind>(['recorded', 'whole'])('the close of a run %s: its last step, the run and the claim in one statement', (kind) => {
  it('a rescued worker’s late close writes nothing for the claims it lost and everything for those it holds', async () => {
    await newIntents(6);
    const claims = await claimDueIntents(db(), claimArgs('worker-a'));
    expect(claims).toHaveLength(6);
    const close = await closer(kind, claims);
    const lost = [1, 4];
    await rescue(lost.map((i) => claims[i]));

    const closed = (await close(db())) as Awaited<ReturnType<typeof closeRunsAndClaims>>;
    expect(closed.map((c) => c?.outcome ?? null)).toEqual(claims.map((_, i) => (lost.includes(i) ? null : 'completed')));
    expect(closed[0]!.intent.id).toBe(claims[0].intentId);

    const rows = await db().$queryRaw<{ id: string; work: string; run: string; step: string | null }[]>`
      SELECT w.intent_id::text AS id, w.state AS work, r.status AS run, s.status AS step
      FROM intent_work w JOIN pipeline_runs r ON r.intent_id = w.intent_id LEFT JOIN pipeline_steps s ON s.run_id = r.id ORDER BY w.intent_id`;
    // A lost claim's run was recorded by the rescue: its step too when the run had recorded it.
    const abandoned = kind === 'recorded' ? 'retryable/abandoned/abandoned' : 'retryable/abandoned/-';
    expect(rows.map((r) => `${r.work}/${r.run}/${r.step ?? '-'}`)).toEqual(claims.map((_, i) => (lost.includes(i) ? abandoned : 'completed/succeeded/completed')));
    // Audited once for each held claim, in order (a run's start before its step's, the step's end before the run's), nothing for the lost ones.
    const audits = await db().$queryRaw<{ id: string; actions: string[] }[]>`
      SELECT intent_id::text AS id, array_agg(action ORDER BY write_seq) AS actions FROM audit_events
      WHERE action LIKE 'pipeline_%' OR action LIKE 'bridge_%' GROUP BY intent_id ORDER BY intent_id`;
    const held = ['pipeline_started', 'bridge_started', 'bridge_completed', 'pipeline_finished'];
    expect(audits).toEqual(
      claims
        .filter((_, i) => kind === 'recorded' || !lost.includes(i))
        .map((c) => ({ id: c.intentId, actions: lost.includes(claims.indexOf(c)) ? held.slice(0, 2) : held })),
    );
    const report = await checkInvariants(db(), { checks: CHECKS.filter((c) => c.name === 'pipeline_steps_once') });
    expect(report.violationCount).toBe(0);
    // Every claim ended, by its close or by the rescue: none of their fences holds a token any more.
    expect(await db().$queryRaw`SELECT resource FROM lease_fences`).toEqual([]);
  });

  it('a run that leaves its intent FAILED ends its claim as failed, whatever the worker chose', async () => {
    const [id] = await newIntents(1);
    const [claim] = await claimDueIntents(db(), claimArgs('worker-a'));
    const close = await closer(kind, [claim]);
    // Failed by another door while the worker held the claim (the engine's command, unfenced).
    await updateIntentStatus({ id, status: 'FAILED', reason: 'operator' }, tester);
    const [closed] = (await close(db(), [{ ...completed, failError: 'attempt 1 of 5: failed by an operator' }])) as Awaited<ReturnType<typeof closeRunsAndClaims>>;
    expect(closed?.outcome).toBe('failed');
    expect(closed?.intent.status).toBe('FAILED');
    const [work] = await db().$queryRaw<{ state: string; lastError: string }[]>`SELECT state, last_error AS "lastError" FROM intent_work`;
    expect(work).toEqual({ state: 'failed', lastError: 'attempt 1 of 5: failed by an operator' });
    expect(await count`SELECT count(*) AS n FROM pipeline_runs WHERE status = 'succeeded'`).toBe(1);
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
      const close = await closer(kind, [claim]);
      await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE intent_id = ${id}::uuid`;
      const worker = await session('bridge-test:closer');
      const rescuer = await session('bridge-test:rescuer');
      await worker.query('BEGIN');
      await rescuer.query('BEGIN');
      let closing: Promise<unknown[]> | undefined;
      let rescued: unknown[] | undefined;
      for (const step of steps) {
        if (step === 'close') {
          closing = started(close(onSession(worker)));
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
      const [row] = await db().$queryRaw<{ work: string; run: string; step: string | null }[]>`
        SELECT w.state AS work, r.status AS run, s.status AS step
        FROM intent_work w JOIN pipeline_runs r ON r.intent_id = w.intent_id LEFT JOIN pipeline_steps s ON s.run_id = r.id`;
      const abandoned = { work: 'retryable', run: 'abandoned', step: kind === 'recorded' ? 'abandoned' : null };
      expect(row).toEqual(winner === 'close' ? { work: 'completed', run: 'succeeded', step: 'completed' } : abandoned);
      expect(await count`SELECT count(*) AS n FROM audit_events WHERE action = 'pipeline_finished'`).toBe(winner === 'close' ? 1 : 0);
      await worker.end();
      await rescuer.end();
    });
  });
});

describe('a worker’s run recorded at its first write', () => {
  const workerOf = (bridges: string[]) => new Worker(workerConfig({ bridges, maxAttempts: 3, retry: { baseMs: 0, jitterMs: 0, maxDelayMs: 0 } }), () => undefined);
  const openFor = (bridge: string): OpenOnClaim => ({ ...open, actor: 'worker:test', bridge, accepts: ['RECEIVED'] });
  const auditOf = (id: string) =>
    db().$queryRaw<{ action: string; at: Date }[]>`SELECT action, at FROM audit_events WHERE intent_id = ${id}::uuid AND action <> 'created' ORDER BY write_seq`;

  it('a bridge’s first command records the run first: the run’s start comes before the status change in the intent’s order', async () => {
    const [id] = await newIntents(1);
    const [claim] = await claimDueIntents(db(), { ...claimArgs('test'), open: openFor('input') });
    await workerOf(['input']).process(claim, new AbortController().signal);
    expect((await auditOf(id)).map((a) => a.action)).toEqual(['pipeline_started', 'bridge_started', 'status_change', 'bridge_completed', 'pipeline_finished']);
    const { runs } = await pipelineHistory(id);
    expect(runs.map((r) => [r.id, r.status, r.steps.map((s) => `${s.bridge}:${s.status}`)])).toEqual([[claim.opened!.run.runId, 'succeeded', ['input:completed']]]);
    expect(await count`SELECT count(*) AS n FROM pipeline_runs`).toBe(1);
  });

  it('a first bridge that writes nothing for a while has its run recorded while it runs, once, at the time it started', async () => {
    const slow = gate();
    registerBridge({ name: 'slow-first', description: 'waits for the test, changes nothing', accepts: ['RECEIVED'], run: async () => (await slow.wait, { waited: true }) }, { replace: true });
    try {
      const [id] = await newIntents(1);
      const [claim] = await claimDueIntents(db(), { ...claimArgs('test'), open: openFor('slow-first') });
      const processing = workerOf(['slow-first']).process(claim, new AbortController().signal);
      await eventually('the running run recorded', async () => (await count`SELECT count(*) AS n FROM pipeline_steps WHERE status = 'running'`) === 1, { timeoutMs: 30_000 });
      const started = await auditOf(id);
      expect(started.map((a) => a.action)).toEqual(['pipeline_started', 'bridge_started']);
      for (const a of started) expect(a.at.toISOString()).toBe(claim.opened!.run.startedAt!.toISOString());
      slow.open();
      await processing;
      expect((await auditOf(id)).map((a) => a.action)).toEqual(['pipeline_started', 'bridge_started', 'bridge_completed', 'pipeline_finished']);
      const { runs } = await pipelineHistory(id);
      expect(runs.map((r) => [r.status, r.steps.map((s) => `${s.bridge}:${s.status}`)])).toEqual([['succeeded', ['slow-first:completed']]]);
      const [work] = await db().$queryRaw<{ state: string }[]>`SELECT state FROM intent_work`;
      expect(work.state).toBe('completed');
      const report = await checkInvariants(db(), { checks: CHECKS.filter((c) => c.name === 'pipeline_steps_once') });
      expect(report.violationCount).toBe(0);
    } finally {
      unregisterBridge('slow-first');
    }
  });
});
