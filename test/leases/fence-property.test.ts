import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { reevaluateIntent } from '@/lib/intents/commands';
import { highestAcceptedToken } from '@/lib/leases/fencing';
import { PostgresLeases } from '@/lib/leases/postgres';
import { makeIntent, resetDatabase, tester } from '../helpers';

/**
 * The fence's promise as a property: whatever sequence of real grants and forged writes arrives, the fence never
 * holds more than the highest token granted, and a write is accepted exactly when it carries the newest grant.
 */
type Op = { kind: 'grant' } | { kind: 'forge'; token: number; through: 'sql' | 'engine' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.constant<Op>({ kind: 'grant' }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('forge' as const),
      token: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.constant(Number.MAX_SAFE_INTEGER)),
      through: fc.constantFrom('sql' as const, 'engine' as const),
    }),
    weight: 3,
  },
);

describe('forged fencing tokens (property)', () => {
  beforeEach(resetDatabase);

  it('no sequence of forged tokens moves a fence past the highest token granted', async () => {
    const leases = new PostgresLeases();
    const intent = await makeIntent('PROCESSED', { n: 0 });
    let run = 0;
    // Every correction distinct: a repeat of an applied one answers "already applied" without consulting the fence.
    let write = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        const resource = `prop:${run++}`;
        let granted: number | null = null;
        for (const o of ops) {
          if (o.kind === 'grant') {
            const g = await leases.acquire(resource, 'holder', 60_000);
            if (!g.acquired) throw new Error('not acquired');
            await leases.release(resource, 'holder', g.token);
            expect(g.token).toBeGreaterThan(granted ?? 0);
            granted = g.token;
          } else if (o.through === 'sql') {
            const [row] = await db().$queryRaw<{ ok: boolean }[]>`SELECT bridge_fence_accept(${resource}, ${o.token}::bigint) AS ok`;
            expect(row.ok).toBe(o.token === granted);
          } else {
            const answer = await reevaluateIntent({ id: intent.id, diff: { n: o.token, write: write++ }, source: 'prop', reason: 'forged', fencing: { resource, token: o.token } }, tester).then(
              () => 'applied',
              (e: { code?: string }) => e.code,
            );
            expect(answer).toBe(o.token === granted ? 'applied' : 'fencing_token_stale');
          }
          expect(await highestAcceptedToken(resource)).toBe(granted);
        }
      }),
      { numRuns: 25 },
    );
  });
});
