import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { bulkUpdateStatus, updateIntentStatus } from '@/lib/intents/commands';
import { ValidationError } from '@/lib/shared/errors';
import { makeIntent, resetDatabase, tester } from '../helpers';

/** An operator's reason for a status change travels to the audit event's details, and only when given. */

beforeEach(resetDatabase);

const events = (id: string) => db().$queryRaw<{ details: unknown }[]>`SELECT details FROM audit_events WHERE intent_id = ${id}::uuid ORDER BY id`;
const lastDetails = async (id: string) => (await events(id)).at(-1)?.details;

describe('reason on status updates', () => {
  it('is stored trimmed in details.reason; absent or blank, there is no reason key', async () => {
    const a = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: a.id, status: 'NORMALIZED', reason: '  customer called  ' }, tester);
    expect(await lastDetails(a.id)).toEqual({ reason: 'customer called' });
    const b = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: b.id, status: 'NORMALIZED' }, tester);
    expect(await lastDetails(b.id)).toBeNull();
    const c = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: c.id, status: 'NORMALIZED', reason: '   ' }, tester);
    expect(await lastDetails(c.id)).toBeNull();
  });

  it('is kept with a keyed update too', async () => {
    const a = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: a.id, status: 'NORMALIZED', reason: 'why', idempotencyKey: 'k-1' }, tester);
    expect(await lastDetails(a.id)).toEqual({ reason: 'why' });
  });

  it('over 500 characters is refused naming the field, nothing changes', async () => {
    const a = await makeIntent('RECEIVED');
    const err = await updateIntentStatus({ id: a.id, status: 'NORMALIZED', reason: 'x'.repeat(501) }, tester).catch((e) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.issues).toEqual([{ field: 'reason', message: 'must be at most 500 characters' }]);
    expect((await events(a.id)).length).toBe(1);
  });

  it('bulk: every changed intent’s event carries it beside the batch size', async () => {
    const [a, b] = [await makeIntent('RECEIVED'), await makeIntent('RECEIVED')];
    await bulkUpdateStatus({ ids: [a.id, b.id], status: 'FAILED', reason: 'upstream outage' }, tester);
    expect(await lastDetails(a.id)).toEqual({ batchSize: 2, reason: 'upstream outage' });
    expect(await lastDetails(b.id)).toEqual({ batchSize: 2, reason: 'upstream outage' });
    const c = await makeIntent('RECEIVED');
    await bulkUpdateStatus({ ids: [c.id], status: 'FAILED' }, tester);
    expect(await lastDetails(c.id)).toEqual({ batchSize: 1 });
  });
});
