import { beforeAll, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { correctionIdFor } from '@/lib/intents/json';
import { listIntents } from '@/lib/intents/queries';
import { INTENT_STATUSES, type IntentStatus } from '@/lib/shared/intent-states';
import { seedLargeData } from '@/lib/seed/large';
import { resetDatabase, tester } from '../helpers';
import { expectCompleteHistory } from '../integrity';

/**
 * The set-based large seed must leave exactly what the engine would: whole histories, versions, correction ids the
 * engine recognises — so the console measured on it behaves as on real data.
 */
const COUNT = 2_000;

beforeAll(async () => {
  await resetDatabase();
  const r = await seedLargeData(COUNT);
  expect(r.intents).toBe(COUNT);
});

describe('seedLargeData', () => {
  it('spreads the intents over every status, newest update first in the list', async () => {
    const rows = await db().$queryRaw<{ status: IntentStatus; n: bigint }[]>`SELECT status::text AS status, count(*) AS n FROM intents GROUP BY status`;
    expect(rows.map((r) => r.status).sort()).toEqual([...INTENT_STATUSES].sort());
    const page = await listIntents({ limit: 20 });
    const times = page.items.map((i) => Date.parse(i.updatedAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(page.nextCursor).not.toBeNull();
  });

  it('leaves a whole history behind every intent, as the engine writes it', async () => {
    for (const status of INTENT_STATUSES) {
      const sample = await db().$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM intents WHERE status = ${status}::"IntentStatus" LIMIT 3`;
      for (const { id } of sample) await expectCompleteHistory(id);
    }
  });

  it('gives corrections the ids the engine derives, so the same correction again is already applied', async () => {
    const [c] = await db().$queryRaw<{ intentId: string; correctionId: string; diff: Record<string, never> }[]>`
      SELECT intent_id::text AS "intentId", correction_id AS "correctionId", diff FROM corrections LIMIT 1`;
    expect(c.correctionId).toBe(correctionIdFor(c.intentId, c.diff));
    const again = await reevaluateIntent({ id: c.intentId, diff: c.diff, source: 'test', reason: 'again' }, tester);
    expect(again.alreadyApplied).toBe(true);
    expect(again.version).toBe(3);
  });

  it('leaves intents the engine moves on from their seeded version', async () => {
    const [row] = await db().$queryRaw<{ id: string; version: number }[]>`SELECT id::text AS id, version FROM intents WHERE status = 'PROCESSED' LIMIT 1`;
    const moved = await updateIntentStatus({ id: row.id, status: 'COMPLETED', expectedVersion: row.version }, tester);
    expect(moved.intent.version).toBe(row.version + 1);
    await expectCompleteHistory(row.id);
  });
});
