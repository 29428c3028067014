/**
 * Bridges the worker process tests load through PIPELINE_BRIDGE_MODULES, as a deployment loads its own.
 * `test-gate` waits for a shared advisory lock the test holds exclusively: the test decides when a worker is
 * "mid-run" and when it may go on, without sleeping.
 */
import { db } from '@/lib/db/client';
import { registerBridge } from '@/lib/pipeline/bridges';

export const GATE_LOCK_KEY = 4242001;

registerBridge(
  {
    name: 'test-gate',
    description: 'waits until the test lets it through (a shared advisory lock)',
    accepts: ['NORMALIZED'],
    async run() {
      await db().$transaction(async (tx) => {
        await tx.$queryRaw`SELECT pg_advisory_xact_lock_shared(${GATE_LOCK_KEY}::bigint)::text`;
      });
      return { passed: true };
    },
  },
  { replace: true },
);

export const ANSWER_GATE_LOCK_KEY = 4242002;

/**
 * `test-answer-gate` waits for the answer `callback` (another service's, say), then, holding it, waits at a second
 * gate: the test kills the worker there, after the answer was recorded and consumed, before the step is.
 */
registerBridge(
  {
    name: 'test-answer-gate',
    description: 'waits for the answer "callback", then until the test lets it through',
    accepts: ['PROCESSED'],
    async run(ctx) {
      const decision = await ctx.waitFor({ name: 'callback', timeoutMs: 3_600_000, onTimeout: 'fail' });
      await db().$transaction(async (tx) => {
        await tx.$queryRaw`SELECT pg_advisory_xact_lock_shared(${ANSWER_GATE_LOCK_KEY}::bigint)::text`;
      });
      return { answer: decision.answer };
    },
  },
  { replace: true },
);
