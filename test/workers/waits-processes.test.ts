import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent } from '@/lib/intents/commands';
import { CHECKS } from '@/lib/invariants/checks';
import { checkInvariants } from '@/lib/invariants/run';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { answerWait } from '@/lib/pipeline/waits';
import { resetEngine, session } from '../barriers';
import { tester } from '../helpers';
import { eventually } from '../wait';
import { ANSWER_GATE_LOCK_KEY } from './bridges.fixture';
import { workersPerTest } from './spawn';

/**
 * A wait across worker processes: the answer is recorded (by the API's function, in this process), a worker resumes
 * the run and is SIGKILLed holding the answer, before its step is recorded; its claim is rescued (lease moved by
 * SQL) and another worker resumes the run once — one resume, one completed step, the intent completed once.
 */
const start = workersPerTest();

beforeEach(resetEngine);
afterAll(disconnectLockDb);

const workRow = async (id: string) =>
  (await db().$queryRaw<{ state: string; claimToken: string | null; claimedBy: string | null }[]>`
    SELECT state, claim_token::text AS "claimToken", claimed_by AS "claimedBy" FROM intent_work WHERE intent_id = ${id}::uuid`)[0];

describe('a worker killed between the answer and the resume', () => {
  it('SIGKILL after the answer was recorded and taken: the claim is rescued and the run resumes once', async () => {
    const gate = await session('bridge-test:answer-gate');
    await gate.query('SELECT pg_advisory_lock($1::bigint)', [ANSWER_GATE_LOCK_KEY]);
    const { id } = await createIntent({ payload: { order: 'WAIT-KILL' }, source: 'test' }, tester);
    const env = { PIPELINE_BRIDGES: 'input,normalize,test-answer-gate,feedback,output', WORKER_LEASE_MS: '60000' };

    const a = start(env);
    await eventually('the run waits for its callback', async () => (await workRow(id))?.state === 'waiting', { timeoutMs: 90_000 });
    expect((await workRow(id)).claimedBy).not.toBeNull();
    expect((await answerWait({ id, name: 'callback', body: { ok: 1 } }, { name: 'partner-service' })).outcome).toBe('accepted');
    // Worker A claims it again (woken by the answer), takes the answer and stops at the gate, holding it.
    await eventually(
      'worker A holding the answer at the gate',
      async () => (await gate.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1 AND objid = $1::bigint::oid`, [ANSWER_GATE_LOCK_KEY])).rowCount! > 0,
      { timeoutMs: 90_000 },
    );
    const claimA = await workRow(id);
    expect(claimA.state).toBe('running');
    a.child.kill('SIGKILL');
    await a.exited;
    await gate.query('SELECT pg_advisory_unlock($1::bigint)', [ANSWER_GATE_LOCK_KEY]);

    await db().$executeRaw`UPDATE intent_work SET lease_until = now() - interval '1 second' WHERE intent_id = ${id}::uuid`;
    const b = start(env);
    await eventually('worker B completed it', async () => (await workRow(id)).state === 'completed', { timeoutMs: 90_000 });
    expect((await workRow(id)).claimToken).not.toBe(claimA.claimToken);

    const steps = await db().$queryRaw<{ s: string }[]>`SELECT bridge || ':' || status AS s FROM pipeline_steps WHERE intent_id = ${id}::uuid AND bridge = 'test-answer-gate' ORDER BY id`;
    // Waiting, then A's step abandoned by the rescue, then B's completed with the same answer.
    expect(steps.map((r) => r.s)).toEqual(['test-answer-gate:waiting', 'test-answer-gate:abandoned', 'test-answer-gate:completed']);
    const [{ result }] = await db().$queryRaw<{ result: unknown }[]>`SELECT result FROM pipeline_steps WHERE intent_id = ${id}::uuid AND bridge = 'test-answer-gate' AND status = 'completed'`;
    expect(result).toEqual({ answer: { ok: 1 } });
    const counts = await db().$queryRaw<{ action: string; n: bigint }[]>`
      SELECT action, count(*) AS n FROM audit_events WHERE intent_id = ${id}::uuid AND action IN ('wait_opened', 'wait_answered', 'wait_resumed', 'claim_rescued') GROUP BY action ORDER BY action`;
    expect(counts.map((c) => `${c.action}:${c.n}`)).toEqual(['claim_rescued:1', 'wait_answered:1', 'wait_opened:1', 'wait_resumed:1']);
    const [intent] = await db().$queryRaw<{ status: string }[]>`SELECT status::text AS status FROM intents WHERE id = ${id}::uuid`;
    expect(intent.status).toBe('COMPLETED');
    const report = await checkInvariants(db(), { checks: CHECKS.filter((c) => ['pipeline_steps_once', 'waits_decided_once', 'history_complete'].includes(c.name)) });
    expect(report.violationCount).toBe(0);

    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
    await gate.end();
  }, 240_000);
});
