import { beforeAll, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { pipelineHistory } from '@/lib/pipeline/history';
import { registeredBridges } from '@/lib/pipeline/bridges';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { DEMO_LEDGER_BRIDGE } from '@/lib/seed/demo-failures';
import { seedDemoData } from '@/lib/seed/demo';
import { getWorkersOverview } from '@/lib/workers/queries';
import { resetDatabase } from '../helpers';

/**
 * The demo data a new user opens: its FAILED intents failed through the pipeline, so each page says why — the
 * attempts with their errors and the reason on the FAILED mark.
 */
beforeAll(async () => {
  await resetDatabase();
  expect(await seedDemoData(12)).toBe(12);
  await disconnectLockDb();
});

describe('seedDemoData', () => {
  it('leaves every FAILED intent with its failed attempts and the reason it was failed', async () => {
    const failed = await db().$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM intents WHERE status = 'FAILED'`;
    expect(failed).toHaveLength(2);
    for (const { id } of failed) {
      const { runs, failure } = await pipelineHistory(id);
      expect(runs.map((r) => [r.attempt, r.status])).toEqual([
        [3, 'failed'],
        [2, 'failed'],
        [1, 'failed'],
      ]);
      for (const run of runs) {
        const step = run.steps.find((s) => s.status === 'failed');
        expect(step).toMatchObject({ bridge: DEMO_LEDGER_BRIDGE, error: expect.stringContaining('The partner ledger') });
      }
      expect(failure?.reason).toMatch(/^pipeline: partner-ledger failed: bridge_failed: The partner ledger refused .* account C\d+ is closed/);
    }
    // The Workers page lists them among the failures, as a worker's last attempt leaves them, ready to rerun.
    const overview = await getWorkersOverview();
    expect(overview.queue.failed).toBe(2);
    expect(overview.failed.map((f) => f.intentId).sort()).toEqual(failed.map((f) => f.id).sort());
    for (const f of overview.failed) {
      expect(f).toMatchObject({ attempt: 3, maxAttempts: 3, lastError: expect.stringMatching(/^attempt 3 of 3: .*The partner ledger refused .* account C\d+ is closed/) });
    }
    // The demo's bridge is gone once the seed is done: the console's BridgeSet never runs it.
    expect(registeredBridges().map((b) => b.name)).not.toContain(DEMO_LEDGER_BRIDGE);
  });

  it('still spreads the intents over every status', async () => {
    const rows = await db().$queryRaw<{ status: string; n: number }[]>`SELECT status::text AS status, count(*)::int AS n FROM intents GROUP BY status ORDER BY status`;
    expect(rows).toEqual(['COMPLETED', 'CORRECTED', 'FAILED', 'NORMALIZED', 'PROCESSED', 'RECEIVED'].map((status) => ({ status, n: 2 })));
  });
});
