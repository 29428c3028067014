import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { maintainPartitions, partitionPolicy } from '@/lib/db/partitions';
import { makeIntent, resetDatabase } from '../helpers';

/** What the engine recorded for intents' timelines is kept for the configured days, and only that goes (whole days). */
describe('intent engine events retention', () => {
  beforeEach(resetDatabase);

  it('retires the days older than the retention and nothing else', async () => {
    const intent = await makeIntent();
    await db().$queryRaw`SELECT "bridge_partitions_cover"('intent_engine_events'::regclass, now() - interval '15 days', now())::text`;
    await db().$executeRaw`
      INSERT INTO intent_engine_events (intent_id, kind, operation, waited_ms, outcome, at)
      VALUES (${intent.id}::uuid, 'lock_wait', 'update_status', 40, 'acquired', now() - interval '15 days'),
             (${intent.id}::uuid, 'lock_wait', 'update_status', 50, 'acquired', now() - interval '13 days'),
             (${intent.id}::uuid, 'lock_timeout', 'reevaluate', 5000, 'timed_out', now())`;
    const auditBefore = await db().auditEvent.count();
    const policy = { ...partitionPolicy('intent_engine_events'), retentionDays: 14 };
    const first = await maintainPartitions(policy);
    expect(first.retired.length).toBeGreaterThan(0);
    const left = await db().$queryRaw<{ waited: number }[]>`SELECT waited_ms AS waited FROM intent_engine_events ORDER BY id`;
    expect(left.map((r) => r.waited)).toEqual([50, 5000]);
    expect(await db().auditEvent.count()).toBe(auditBefore);
    expect((await maintainPartitions(policy)).retired).toEqual([]);
  });
});
