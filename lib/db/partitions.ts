import { env } from '@/lib/env';
import { db } from './client';

/**
 * The history tables partitioned by month, and what housekeeping does to them (prisma/functions/70_partitions.sql
 * holds the how: one source of truth for the migration's layout, housekeeping and tests).
 */
export type PartitionPolicy = {
  table: string;
  /** Months past the current one kept ready, so no write ever lands in the default partition. */
  monthsAhead: number;
  /** 0 keeps everything; else a partition is retired once its newest possible row is this many days old. */
  retentionDays: number;
  /** Retiring only detaches the partition (kept as a table of its own, for archiving) instead of dropping it. */
  detachOnly: boolean;
};

export function partitionPolicies(): PartitionPolicy[] {
  const e = env();
  return [
    {
      table: 'audit_events',
      monthsAhead: e.PARTITION_MONTHS_AHEAD,
      retentionDays: e.AUDIT_EVENTS_RETENTION_DAYS,
      detachOnly: e.AUDIT_EVENTS_RETENTION_ACTION === 'detach',
    },
  ];
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
      ${policy.table}::regclass, ${now}::timestamptz, ${policy.monthsAhead}::int, ${policy.retentionDays}::int, ${policy.detachOnly}::boolean)`;
  return { table: policy.table, ...row };
}

/** One round for every partitioned table, one after another (each in its own transaction, under its own lock). */
export async function maintainAllPartitions(now: Date = new Date()): Promise<MaintenanceReport[]> {
  const reports: MaintenanceReport[] = [];
  for (const policy of partitionPolicies()) reports.push(await maintainPartitions(policy, now));
  return reports;
}
