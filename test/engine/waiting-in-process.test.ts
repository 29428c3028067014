import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { LockTimeoutError, OperationCancelledError } from '@/lib/intents/errors';
import { waitingTogether } from '@/lib/intents/together';
import type { JsonObject } from '@/lib/shared/json';
import { closeSession, lockWaiters, session, settle, waitForCorrectionsWaiting, type Session } from '../barriers';
import { intentRow, makeIntent, resetDatabase, tester } from '../helpers';
import { eventually } from '../wait';

/**
 * What happens to commands waiting in this process for their intent's call at the database when that call fails
 * (lib/intents/together.ts for corrections, lib/intents/row-waits.ts for status updates): a cancel ends the whole
 * batch, a batch's lock wait that ran out fails only the corrections whose own time is up, a batch that failed
 * otherwise (its connection lost) sends each correction again alone, and a status update whose lock timeout runs
 * out while it waits for its turn fails as a lock timeout.
 *
 * The call at the database is held at a known point by a table lock on `corrections` (or `audit_events`): it has
 * taken the intent's row and waits to write its record.
 */
let gate: Session | undefined;

async function closeGate(table: 'corrections' | 'audit_events'): Promise<Session> {
  gate = await session('bridge-test:gate');
  await gate.query('BEGIN');
  await gate.query(`LOCK TABLE ${table} IN SHARE MODE`);
  return gate;
}

beforeEach(resetDatabase);
afterEach(async () => {
  if (gate) await closeSession(gate);
  gate = undefined;
});

const correct = (id: string, diff: JsonObject) => ({ id, diff, source: 'svc-a', reason: 'in process' });

/** The backend of the intent's correction call, once it waits on the gate. */
async function heldCall(intentId: string): Promise<number> {
  return eventually(`the correction call of ${intentId} to wait on the gate`, async () => {
    const rows = await db().$queryRaw<{ pid: number }[]>`
      SELECT pid FROM pg_stat_activity WHERE application_name = ${`bridge:reevaluate:${intentId}`} AND wait_event_type = 'Lock'`;
    return rows.length === 1 ? rows[0].pid : null;
  });
}

const corrections = async (id: string) => Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM corrections WHERE intent_id = ${id}::uuid`)[0].n);

describe('corrections waiting together when the call before them fails', () => {
  it('a cancel ends the call it hits: the one alone, then the whole batch; nothing is applied', async () => {
    const intent = await makeIntent('PROCESSED');
    await closeGate('corrections');
    const a = settle(reevaluateIntent(correct(intent.id, { a: 1 }), tester, { strategy: 'pessimistic' }));
    await waitForCorrectionsWaiting(intent.id, 1);
    const b = settle(reevaluateIntent(correct(intent.id, { b: 1 }), tester, { strategy: 'pessimistic' }));
    const c = settle(reevaluateIntent(correct(intent.id, { c: 1 }), tester, { strategy: 'adaptive' }));
    await waitForCorrectionsWaiting(intent.id, 3);

    await db().$queryRaw`SELECT pg_cancel_backend(${await heldCall(intent.id)}::int)::text`;
    const ra = await a;
    expect(ra.ok ? null : ra.error).toBeInstanceOf(OperationCancelledError);

    // b and c went together and are held at the gate in one call: cancel it too.
    await eventually('b and c sent together', () => waitingTogether(intent.id) === 0);
    await db().$queryRaw`SELECT pg_cancel_backend(${await heldCall(intent.id)}::int)::text`;
    for (const r of [await b, await c]) expect(r.ok ? null : r.error).toBeInstanceOf(OperationCancelledError);

    await gate!.query('COMMIT');
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: intent.version });
    expect(await corrections(intent.id)).toBe(0);
  });

  it('a batch whose lock wait ran out fails the correction whose time is up; the other goes again and applies', async () => {
    const intent = await makeIntent('PROCESSED');
    await closeGate('corrections');
    const a = settle(reevaluateIntent(correct(intent.id, { a: 1 }), tester, { strategy: 'pessimistic' }));
    await waitForCorrectionsWaiting(intent.id, 1);
    const short = settle(reevaluateIntent(correct(intent.id, { short: 1 }), tester, { strategy: 'pessimistic', lockTimeoutMs: 300 }));
    const long = settle(reevaluateIntent(correct(intent.id, { long: 1 }), tester, { strategy: 'pessimistic', lockTimeoutMs: 60_000 }));
    await waitForCorrectionsWaiting(intent.id, 3);

    await db().$queryRaw`SELECT pg_cancel_backend(${await heldCall(intent.id)}::int)::text`;
    expect((await a).ok).toBe(false);
    // The batch waits on the gate under the short one's lock timeout (it goes first), which runs out.
    const rs = await short;
    expect(rs.ok ? null : rs.error).toBeInstanceOf(LockTimeoutError);
    // The long one went again, alone, and waits on the gate until it opens.
    await heldCall(intent.id);
    await gate!.query('COMMIT');
    const rl = await long;
    expect(rl.ok ? rl.value : rl.error).toMatchObject({ alreadyApplied: false, version: intent.version + 1, correctionCount: 1 });
    expect((await intentRow(intent.id)).payload).toMatchObject({ long: 1 });
    expect((await intentRow(intent.id)).payload).not.toHaveProperty('short');
  });

  it('a batch whose connection was lost sends each correction again alone, and each applies once', async () => {
    const intent = await makeIntent('PROCESSED');
    await closeGate('corrections');
    const a = settle(reevaluateIntent(correct(intent.id, { a: 1 }), tester, { strategy: 'pessimistic' }));
    await waitForCorrectionsWaiting(intent.id, 1);
    const b = settle(reevaluateIntent(correct(intent.id, { b: 1 }), tester, { strategy: 'pessimistic' }));
    const c = settle(reevaluateIntent(correct(intent.id, { c: 1 }), tester, { strategy: 'adaptive' }));
    await waitForCorrectionsWaiting(intent.id, 3);

    await db().$queryRaw`SELECT pg_cancel_backend(${await heldCall(intent.id)}::int)::text`;
    expect((await a).ok).toBe(false);
    await eventually('b and c sent together', () => waitingTogether(intent.id) === 0);
    await db().$queryRaw`SELECT pg_terminate_backend(${await heldCall(intent.id)}::int)::text`;
    // Each goes again on its own call, the first held at the gate.
    await heldCall(intent.id);
    await gate!.query('COMMIT');
    const [rb, rc] = [await b, await c];
    expect(rb.ok ? rb.value : rb.error).toMatchObject({ alreadyApplied: false, version: intent.version + 1 });
    expect(rc.ok ? rc.value : rc.error).toMatchObject({ alreadyApplied: false, version: intent.version + 2 });
    expect((await intentRow(intent.id)).payload).toMatchObject({ b: 1, c: 1 });
    expect(await corrections(intent.id)).toBe(2);
  });
});

describe('status updates waiting for their turn', () => {
  it('one whose lock timeout runs out while the one before it is at the database fails as a lock timeout; that one applies', async () => {
    const intent = await makeIntent('PROCESSED');
    await closeGate('audit_events');
    const first = settle(updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester, { strategy: 'pessimistic' }));
    await eventually('the first update to wait on the gate', async () => (await lockWaiters({ application: `bridge:update_status:${intent.id}` })) === 1);
    const second = await updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester, { strategy: 'pessimistic', lockTimeoutMs: 100 }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(LockTimeoutError);
    expect((second as LockTimeoutError).details).toMatchObject({ intentIds: [intent.id], nowait: false, lockTimeoutMs: 100 });
    await gate!.query('COMMIT');
    const r = await first;
    expect(r.ok ? r.value : r.error).toMatchObject({ alreadyApplied: false, intent: { status: 'COMPLETED', version: intent.version + 1 } });
  });
});
