import { env, type Env } from '@/lib/env';
import { db } from './client';

/**
 * The history tables partitioned by time, and what housekeeping does to them (prisma/functions/70_partitions.sql
 * holds the how: one source of truth for the migrations' layout, housekeeping and tests). A table's period, a month
 * or a day, is the one its migration made; the functions read it from the table's partitions.
 */
export type PartitionPolicy = {
  table: string;
  /** Periods (months or days, the table's own) past the current one kept ready, so no write lands in the catch-all. */
  ahead: number;
  /** 0 keeps everything; else a partition is retired once its newest possible row is this many days old. */
  retentionDays: number;
  /** Retiring only detaches the partition (kept as a table of its own, for archiving) instead of dropping it. */
  detachOnly: boolean;
};

/**
 * Every partitioned table with its policy. The lock history's samples and intents are not listed: they are
 * partitioned on their episode's start and follow lock_episodes, which creates and retires their days with its own.
 */
export function partitionPolicies(e: Env = env()): PartitionPolicy[] {
  const daily = (table: string, retentionDays: number): PartitionPolicy => ({ table, ahead: e.PARTITION_DAYS_AHEAD, retentionDays, detachOnly: false });
  return [
    { table: 'audit_events', ahead: e.PARTITION_MONTHS_AHEAD, retentionDays: e.AUDIT_EVENTS_RETENTION_DAYS, detachOnly: e.AUDIT_EVENTS_RETENTION_ACTION === 'detach' },
    daily('lease_events', e.LEASE_EVENTS_RETENTION_DAYS),
    daily('intent_engine_events', e.INTENT_ENGINE_EVENTS_RETENTION_DAYS),
    daily('intent_outcome_minutes', e.INTENT_OUTCOMES_RETENTION_DAYS),
    daily('lock_episodes', e.LOCK_HISTORY_RETENTION_DAYS),
    daily('lock_episode_storms', e.LOCK_HISTORY_RETENTION_DAYS),
  ];
}

/** The policy of one table (tests adjust it with their own numbers). */
export function partitionPolicy(table: string): PartitionPolicy {
  const policy = partitionPolicies().find((p) => p.table === table);
  if (!policy) throw new Error(`${table} is not a partitioned history table`);
  return policy;
}

export type MaintenanceReport = {
  table: string;
  /** false: another instance was maintaining this table at the time; it was left to that one. */
  ran: boolean;
  created: string[];
  retired: string[];
};

/** One round for one table at `now` (tests pass a time of their choosing instead of waiting for it). */
export async function maintainPartitions(policy: PartitionPolicy, now: Date = new Date()): Promise<MaintenanceReport> {
  const [row] = await db().$queryRaw<{ ran: boolean; created: string[]; retired: string[] }[]>`
    SELECT ran, created, retired FROM "bridge_partitions_maintain"(
      ${policy.table}::regclass, ${now}::timestamptz, ${policy.ahead}::int, ${policy.retentionDays}::int, ${policy.detachOnly}::boolean)`;
  return { table: policy.table, ...row };
}

/**
 * One round for every partitioned table, one after another (each in its own transaction, under its own lock). One
 * table's failure (a lock not granted within its second, say) does not keep the others from their round.
 */
export async function maintainAllPartitions(now: Date = new Date()): Promise<MaintenanceReport[]> {
  const reports: MaintenanceReport[] = [];
  const failures: unknown[] = [];
  for (const policy of partitionPolicies()) {
    try {
      reports.push(await maintainPartitions(policy, now));
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length) throw new AggregateError(failures, `maintaining ${failures.length} partitioned table(s) failed`);
  return reports;
}
