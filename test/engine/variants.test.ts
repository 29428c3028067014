import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { correctionIdFor } from '@/lib/intents/json';
import { canTransition, INTENT_STATUSES, statusAfterCorrection, type IntentStatus } from '@/lib/shared/intent-states';
import { correct, updateStatus, type KeyRef, type LockMode } from '@/lib/intents/statements';
import { makeIntent, resetDatabase, tester } from '../helpers';

/**
 * One statement per command, several variants of it: locked (FOR UPDATE), optimistic (no lock, version-checked),
 * NOWAIT, adaptive, and each with an idempotency key whose record the same statement completes. For the same
 * situation every variant must answer the same outcome and write the same rows — a table of situations × variants.
 */
beforeEach(resetDatabase);

type Variant = { name: string; lock: LockMode; keyed: boolean };
const VARIANTS: Variant[] = [
  { name: 'locked', lock: 'wait', keyed: false },
  { name: 'optimistic', lock: 'none', keyed: false },
  { name: 'NOWAIT', lock: 'nowait', keyed: false },
  { name: 'adaptive', lock: 'adaptive', keyed: false },
  { name: 'keyed, locked', lock: 'wait', keyed: true },
  { name: 'keyed, optimistic', lock: 'none', keyed: true },
  { name: 'keyed, NOWAIT', lock: 'nowait', keyed: true },
];
const MISSING = '00000000-0000-4000-8000-000000000000';

async function claimKey(): Promise<KeyRef> {
  const key = { scope: 'variants', key: randomUUID() };
  await db().$executeRaw`
    INSERT INTO idempotency_records (scope, key, operation, request_hash, state, locked_until, expires_at)
    VALUES (${key.scope}, ${key.key}, 'test', 'hash', 'in_progress', now() + interval '1 minute', now() + interval '1 day')`;
  return key;
}

async function storedOutcome(key: KeyRef): Promise<unknown> {
  const [row] = await db().$queryRaw<{ state: string; body: { outcome?: string } | null }[]>`
    SELECT state, response_body AS body FROM idempotency_records WHERE scope = ${key.scope} AND key = ${key.key}`;
  return row.state === 'completed' ? row.body?.outcome : row.state;
}

async function written(id: string) {
  const [row] = await db().$queryRaw<{ audit: number; conflicts: number; corrections: number; version: number | null }[]>`
    SELECT (SELECT count(*)::int FROM audit_events WHERE intent_id = ${id}::uuid) AS audit,
           (SELECT count(*)::int FROM conflict_events WHERE intent_id = ${id}::uuid) AS conflicts,
           (SELECT count(*)::int FROM corrections WHERE intent_id = ${id}::uuid) AS corrections,
           (SELECT version FROM intents WHERE id = ${id}::uuid) AS version`;
  return row;
}

type StatusSituation = { name: string; from: IntentStatus | null; to: IntentStatus; expected?: (v: number) => number; outcome: string };
const STATUS_SITUATIONS: StatusSituation[] = [
  { name: 'fresh', from: 'RECEIVED', to: 'NORMALIZED', outcome: 'applied' },
  { name: 'already applied', from: 'NORMALIZED', to: 'NORMALIZED', outcome: 'already_applied' },
  { name: 'already applied by the request that won the race', from: 'NORMALIZED', to: 'NORMALIZED', expected: (v) => v - 1, outcome: 'already_applied' },
  { name: 'stale version', from: 'RECEIVED', to: 'NORMALIZED', expected: (v) => v + 3, outcome: 'stale' },
  { name: 'invalid transition', from: 'RECEIVED', to: 'COMPLETED', outcome: 'invalid_transition' },
  { name: 'terminal', from: 'COMPLETED', to: 'FAILED', outcome: 'invalid_transition' },
  { name: 'missing', from: null, to: 'NORMALIZED', outcome: 'not_found' },
];

describe('the status update statement', () => {
  it.each(STATUS_SITUATIONS)('$name: every variant answers $outcome and writes the same rows', async (situation) => {
    const seen = [];
    for (const variant of VARIANTS) {
      const intent = situation.from ? await makeIntent(situation.from) : null;
      const id = intent?.id ?? MISSING;
      const key = variant.keyed ? await claimKey() : null;
      const before = await written(id);
      const row = await updateStatus({
        id,
        to: situation.to,
        allowedFrom: INTENT_STATUSES.filter((s) => canTransition(s, situation.to)),
        expectedVersion: intent && situation.expected ? situation.expected(intent.version) : null,
        lock: variant.lock,
        lockTimeoutMs: 1000,
        contendedWithinMs: 30_000,
        actor: tester.name,
        reason: null,
        key,
      });
      const after = await written(id);
      const result = {
        outcome: row.outcome,
        versionStep: (after.version ?? 0) - (before.version ?? 0),
        audit: after.audit - before.audit,
        conflicts: after.conflicts - before.conflicts,
        answeredVersion: row.intent ? row.intent.version - (before.version ?? 0) : null,
      };
      if (key) expect(await storedOutcome(key), variant.name).toBe(row.outcome);
      seen.push({ variant: variant.name, ...result });
    }
    expect(seen[0].outcome).toBe(situation.outcome);
    for (const s of seen) expect({ ...s, variant: seen[0].variant }, s.variant).toEqual(seen[0]);
  });
});

type CorrectionSituation = { name: string; from: IntentStatus | null; expected?: (v: number) => number; applyFirst?: boolean; outcome: string };
const CORRECTION_SITUATIONS: CorrectionSituation[] = [
  { name: 'fresh', from: 'PROCESSED', outcome: 'applied' },
  { name: 'already applied', from: 'PROCESSED', applyFirst: true, outcome: 'already_applied' },
  { name: 'stale version', from: 'PROCESSED', expected: (v) => v - 1, outcome: 'stale' },
  { name: 'invalid transition (FAILED)', from: 'FAILED', outcome: 'refused' },
  { name: 'terminal', from: 'COMPLETED', outcome: 'refused' },
  { name: 'missing', from: null, outcome: 'not_found' },
];
const CORRECTABLE = INTENT_STATUSES.flatMap((from) => {
  const to = statusAfterCorrection(from);
  return to ? [{ from, to }] : [];
});

describe('the correction statement', () => {
  const variants = VARIANTS.filter((v) => v.lock !== 'nowait');
  it.each(CORRECTION_SITUATIONS)('$name: every variant answers $outcome and writes the same rows', async (situation) => {
    const seen = [];
    for (const variant of variants) {
      const intent = situation.from ? await makeIntent(situation.from) : null;
      const id = intent?.id ?? MISSING;
      const diff = { amount: 99 };
      const call = (lock: LockMode, key: KeyRef | null) =>
        correct({
          id,
          correctionId: correctionIdFor(id, diff),
          diff,
          source: 'test',
          reason: 'variants',
          metadata: null,
          actor: tester.name,
          expectedVersion: intent && situation.expected ? situation.expected(intent.version) : null,
          from: CORRECTABLE.map((p) => p.from),
          to: CORRECTABLE.map((p) => p.to),
          lock: lock === 'nowait' ? 'wait' : lock,
          lockTimeoutMs: 1000,
          contendedWithinMs: 30_000,
          key,
          attempt: 1,
        });
      if (situation.applyFirst) expect((await call('wait', null)).outcome).toBe('applied');
      const key = variant.keyed ? await claimKey() : null;
      const before = await written(id);
      const row = await call(variant.lock, key);
      const after = await written(id);
      if (key) expect(await storedOutcome(key), variant.name).toBe(row.outcome);
      seen.push({
        variant: variant.name,
        outcome: row.outcome,
        versionStep: (after.version ?? 0) - (before.version ?? 0),
        audit: after.audit - before.audit,
        conflicts: after.conflicts - before.conflicts,
        corrections: after.corrections - before.corrections,
        correctionCount: row.correctionCount,
      });
    }
    expect(seen[0].outcome).toBe(situation.outcome);
    for (const s of seen) expect({ ...s, variant: seen[0].variant }, s.variant).toEqual(seen[0]);
  });
});
