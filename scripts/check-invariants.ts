import { createPool, createPrisma } from '../lib/db/client';
import { allChecks, checkInvariants, formatReport } from '../lib/invariants/run';

/**
 * `npm run check-invariants` — checks the engine's promises against a database's own records (see
 * lib/invariants/checks.ts and outbox.ts). Read-only: safe against production. Uses DATABASE_URL; with NATS_URL it
 * also reads the event stream and holds the outbox to it (OUTBOX_RETENTION_HOURS as the relays have it, 72 by
 * default); `--json` prints the report as JSON. Exits 1 when a promise is broken, 2 when the check could not run.
 */
const json = process.argv.includes('--json');
const retention = Number(process.env.OUTBOX_RETENTION_HOURS ?? 72);
const url = process.env.DATABASE_URL;
if (!url) {
  console.error('check-invariants: set DATABASE_URL to the database to check (a read-only role is enough).');
  process.exit(2);
}

const pool = createPool(url, 2);
pool.on('error', () => {});
const client = createPrisma(pool, { preparedStatements: false });
try {
  const report = await checkInvariants(client, {
    checks: allChecks({ outboxRetentionHours: Number.isInteger(retention) && retention > 0 ? retention : 72, natsUrl: process.env.NATS_URL || undefined }),
  });
  console.log(json ? JSON.stringify(report, null, 2) : formatReport(report).join('\n'));
  process.exitCode = report.violationCount ? 1 : 0;
} catch (err) {
  console.error(`check-invariants: could not check: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 2;
} finally {
  await client.$disconnect();
  await pool.end();
}
