import { Prisma } from '@/generated/prisma/client';
import type { Db } from '@/lib/db/client';
import { CHECKS, type Check, type CheckOutcome } from './checks';
import { outboxComplete, outboxPublishedOnce } from './outbox';

export type CheckReport = { name: string; promise: string } & ({ skipped: string } | CheckOutcome);
export type InvariantReport = { checkedAt: string; checks: CheckReport[]; violationCount: number };

/**
 * Every check: the database's own records, the outbox against them (for the relays' retention period), and — given
 * a NATS URL — the outbox against the stream. `outboxDrained`: the relays were given time to publish everything,
 * so an unpublished event is lost rather than waiting.
 */
export function allChecks(options: { outboxRetentionHours?: number; natsUrl?: string; outboxDrained?: boolean } = {}): Check[] {
  return [
    ...CHECKS,
    outboxComplete(options.outboxRetentionHours),
    ...(options.natsUrl ? [outboxPublishedOnce(options.natsUrl, { drained: options.outboxDrained })] : []),
  ];
}

/**
 * Runs every check in one read-only REPEATABLE READ transaction: all checks see the same instant of the database,
 * so a change committing meanwhile cannot make two checks disagree, and nothing can be written by accident — the
 * checker is safe to point at a production database (give it a read-only role there as well).
 */
export async function checkInvariants(client: Db, options: { checks?: Check[]; timeoutMs?: number } = {}): Promise<InvariantReport> {
  const checks = options.checks ?? allChecks();
  const timeoutMs = options.timeoutMs ?? 10 * 60_000;
  return client.$transaction(
    async (tx) => {
      await tx.$executeRaw`SET TRANSACTION READ ONLY`;
      const tables = await tx.$queryRaw<{ name: string }[]>`
        SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`;
      const present = new Set(tables.map((t) => t.name));
      const reports: CheckReport[] = [];
      for (const check of checks) {
        const missing = check.requires.filter((t) => !present.has(t));
        if (missing.length) {
          reports.push({ name: check.name, promise: check.promise, skipped: `no ${missing.join(', ')} table in this database` });
          continue;
        }
        reports.push({ name: check.name, promise: check.promise, ...(await check.run(tx)) });
      }
      const [{ now }] = await tx.$queryRaw<{ now: Date }[]>`SELECT now() AS now`;
      const violationCount = reports.reduce((n, r) => n + ('violationCount' in r ? r.violationCount : 0), 0);
      return { checkedAt: now.toISOString(), checks: reports, violationCount };
    },
    { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead, timeout: timeoutMs, maxWait: 30_000 },
  );
}

/** The report as lines for a terminal. */
export function formatReport(report: InvariantReport): string[] {
  const lines = [`Invariants at ${report.checkedAt}`];
  for (const r of report.checks) {
    if ('skipped' in r) {
      lines.push(`  - ${r.name}: skipped (${r.skipped})`);
      continue;
    }
    const mark = r.violationCount ? '✗' : '✓';
    lines.push(`  ${mark} ${r.name}: ${r.promise} — ${r.checked} checked, ${r.violationCount} violation${r.violationCount === 1 ? '' : 's'}`);
    if (r.note) lines.push(`      (${r.note})`);
    for (const v of r.violations) lines.push(`      ${v.subject}: ${v.detail}`);
    if (r.violationCount > r.violations.length) lines.push(`      … and ${r.violationCount - r.violations.length} more`);
  }
  lines.push(report.violationCount ? `${report.violationCount} violation(s) found` : 'no violations');
  return lines;
}
