import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { concurrencySettings } from '@/lib/env';
import { updateIntentStatus } from '@/lib/intents/commands';
import { LockTimeoutError } from '@/lib/intents/errors';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { holdRowLocks, session, started, waitForWaiters } from '../barriers';
import { makeIntent, resetDatabase, tester } from '../helpers';

/**
 * The one-statement status update (lib/intents/repository.ts lockAndUpdateStatusSql), used for pessimistic updates
 * without an idempotency key or NOWAIT: it must write exactly what the five-step transaction writes, record the lock
 * wait, and — the one designed difference — wait for a table lock held by DDL at its start, not under its lock timeout.
 */
const auditOf = async (intentId: string) =>
  db().$queryRaw<{ action: string; actor: string; fromStatus: string; toStatus: string; versionBefore: number; versionAfter: number; details: unknown; detailsIsSqlNull: boolean }[]>`
    SELECT action, actor, from_status::text AS "fromStatus", to_status::text AS "toStatus", version_before AS "versionBefore",
           version_after AS "versionAfter", details, details IS NULL AS "detailsIsSqlNull"
    FROM audit_events WHERE intent_id = ${intentId}::uuid AND action = 'status_change' ORDER BY id`;

describe('status update in one statement', () => {
  beforeEach(resetDatabase);

  it('is the configured path', () => {
    expect(concurrencySettings().statusUpdateInOneStatement).toBe(true);
  });

  it('writes the same audit event as the step-by-step transaction (which an idempotency key still takes)', async () => {
    const [a, b] = await Promise.all([makeIntent('RECEIVED'), makeIntent('RECEIVED')]);
    const one = await updateIntentStatus({ id: a.id, status: 'NORMALIZED' }, tester);
    const steps = await updateIntentStatus({ id: b.id, status: 'NORMALIZED', idempotencyKey: `one-statement-${b.id}` }, tester);
    expect(one).toMatchObject({ alreadyApplied: false, intent: { status: 'NORMALIZED', version: 1, isReplay: false } });
    expect(steps).toMatchObject({ alreadyApplied: false, intent: { status: 'NORMALIZED', version: 1 } });
    expect(Object.keys(one.intent).sort()).toEqual(Object.keys(steps.intent).sort());
    const [ea] = await auditOf(a.id);
    const [eb] = await auditOf(b.id);
    expect(ea).toEqual(eb);
    expect(ea).toMatchObject({ action: 'status_change', actor: tester.name, fromStatus: 'RECEIVED', toStatus: 'NORMALIZED', versionBefore: 0, versionAfter: 1, details: null, detailsIsSqlNull: false });
  });

  it('records the time it waited for the row lock, measured by the server', async () => {
    const intent = await makeIntent('RECEIVED');
    await flushOutcomes();
    await db().$executeRaw`TRUNCATE lock_wait_buckets`;
    const holder = await holdRowLocks([intent.id]);
    const call = started(updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester));
    await waitForWaiters(1, { application: `bridge:update_status:${intent.id}` });
    await new Promise((r) => setTimeout(r, 300));
    await holder.release();
    await call;
    await flushOutcomes();
    const rows = await db().$queryRaw<{ leMs: number; n: bigint; sumMs: number }[]>`
      SELECT le_ms AS "leMs", count AS n, sum_ms AS "sumMs" FROM lock_wait_buckets WHERE operation = 'update_status'`;
    expect(rows).toHaveLength(1);
    expect(Number(rows[0].n)).toBe(1);
    expect(rows[0].sumMs).toBeGreaterThanOrEqual(290);
    expect(rows[0].leMs).toBeGreaterThanOrEqual(500);
  });

  it('waits for a table lock held at its start beyond its lock timeout; NOWAIT calls keep the step-by-step bound', async () => {
    const [a, b] = await Promise.all([makeIntent('RECEIVED'), makeIntent('RECEIVED')]);
    const ddl = await session('bridge-test:ddl');
    await ddl.query('BEGIN');
    await ddl.query('LOCK TABLE audit_events IN SHARE MODE');
    try {
      // The step-by-step transaction (NOWAIT) takes the row, then meets the table lock under its lock timeout.
      const bounded = await updateIntentStatus({ id: b.id, status: 'NORMALIZED', nowait: true }, tester, { lockTimeoutMs: 150 }).catch((e) => e);
      expect(bounded).toBeInstanceOf(LockTimeoutError);
      // The one statement asks for the table lock before its own lock timeout is set: it waits as long as the DDL does.
      let settled = false;
      const waiting = started(updateIntentStatus({ id: a.id, status: 'NORMALIZED' }, tester, { lockTimeoutMs: 150 })).finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 600));
      expect(settled).toBe(false);
      await ddl.query('COMMIT');
      expect(await waiting).toMatchObject({ alreadyApplied: false, intent: { status: 'NORMALIZED', version: 1 } });
    } finally {
      await ddl.query('ROLLBACK').catch(() => undefined);
    }
  });
});
