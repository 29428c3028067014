import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { bulkUpdateStatus, updateIntentStatus } from '@/lib/intents/commands';
import { LockTimeoutError } from '@/lib/intents/errors';
import { NotFoundError } from '@/lib/shared/errors';
import { holdRowLocks, resetEngine, type RowLockHolder } from '../barriers';
import { intentRow, makeIntent, tester } from '../helpers';

/**
 * How the engine's refusals read to the one who gets them: a lock held by a connection that gave no application
 * name is still described (its backend, its state, how long its transaction has been open), and a bulk update
 * naming one intent that does not exist names that intent and changes none of the others.
 */
let holder: RowLockHolder | undefined;
beforeEach(resetEngine);
afterEach(async () => {
  await holder?.release().catch(() => undefined);
  holder = undefined;
});

describe('refusals that name what stopped them', () => {
  it('a lock wait that ran out behind a connection without an application name describes that backend', async () => {
    const intent = await makeIntent('PROCESSED');
    holder = await holdRowLocks([intent.id], '');
    const err = await updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester, { strategy: 'pessimistic', lockTimeoutMs: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect((err as Error).message).toMatch(new RegExp(`held by backend ${holder.session.pid} \\(no application name, idle in transaction, transaction open for [\\d.]+ m?s\\)`));
    expect((err as LockTimeoutError).details).toMatchObject({ lockTimeoutMs: 100, holders: [expect.objectContaining({ pid: holder.session.pid, applicationName: '' })] });
    expect(await intentRow(intent.id)).toMatchObject({ status: 'PROCESSED', version: intent.version });
  });

  it('a bulk update naming one intent that does not exist is refused naming it; the others are not changed', async () => {
    const a = await makeIntent('RECEIVED');
    const missing = '00000000-0000-4000-8000-00000000000f';
    const err = await bulkUpdateStatus({ ids: [a.id, missing], status: 'NORMALIZED' }, tester).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as Error).message).toContain(`Intent ${missing}`);
    expect((err as NotFoundError).details).toEqual({ missing: [missing] });
    expect(await intentRow(a.id)).toMatchObject({ status: 'RECEIVED', version: a.version });
  });

  it('a bulk update’s audit details go on every intent’s audit event', async () => {
    const a = await makeIntent('RECEIVED');
    const b = await makeIntent('RECEIVED');
    await bulkUpdateStatus({ ids: [a.id, b.id], status: 'NORMALIZED' }, tester, { auditDetails: { batchId: 'batch-7' } });
    const rows = await db().$queryRaw<{ details: { batchId?: string; batchSize?: number } }[]>`
      SELECT details FROM audit_events WHERE intent_id = ANY(${[a.id, b.id]}::uuid[]) AND action = 'bulk_status_change'`;
    expect(rows.map((r) => r.details)).toEqual([expect.objectContaining({ batchId: 'batch-7', batchSize: 2 }), expect.objectContaining({ batchId: 'batch-7', batchSize: 2 })]);
  });
});
