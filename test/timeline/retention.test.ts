import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { maintainPartitions, partitionPolicies, partitionPolicy } from '@/lib/db/partitions';
import { makeIntent, resetDatabase } from '../helpers';
import { envSchema } from '@/lib/env';

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

/** Every partitioned history table's retention is configuration, with a floor that keeps its readers' windows whole. */
describe('retention settings', () => {
  it('lease events and outcome minutes are kept a week unless configured; a retention under a day is refused naming the setting', () => {
    const defaults = envSchema.parse({});
    expect([defaults.LEASE_EVENTS_RETENTION_DAYS, defaults.INTENT_OUTCOMES_RETENTION_DAYS]).toEqual([7, 7]);
    const configured = envSchema.parse({ LEASE_EVENTS_RETENTION_DAYS: '30', INTENT_OUTCOMES_RETENTION_DAYS: '2' });
    expect([configured.LEASE_EVENTS_RETENTION_DAYS, configured.INTENT_OUTCOMES_RETENTION_DAYS]).toEqual([30, 2]);
    for (const name of ['LEASE_EVENTS_RETENTION_DAYS', 'INTENT_OUTCOMES_RETENTION_DAYS']) {
      const refused = envSchema.safeParse({ [name]: '0' });
      expect(refused.success).toBe(false);
      expect(refused.error?.issues.map((i) => i.path.join('.'))).toEqual([name]);
    }
  });

  it('each daily table follows its setting', () => {
    const policies = partitionPolicies(envSchema.parse({ LEASE_EVENTS_RETENTION_DAYS: '30', INTENT_OUTCOMES_RETENTION_DAYS: '2', INTENT_ENGINE_EVENTS_RETENTION_DAYS: '21' }));
    const kept = Object.fromEntries(policies.map((p) => [p.table, p.retentionDays]));
    expect(kept).toMatchObject({ lease_events: 30, intent_outcome_minutes: 2, intent_engine_events: 21 });
  });
});
