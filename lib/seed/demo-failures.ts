import { db } from '@/lib/db/client';
import { registerBridge, unregisterBridge } from '@/lib/pipeline/bridges';
import { BridgeError } from '@/lib/pipeline/errors';
import { runPipeline } from '@/lib/pipeline/run';
import type { Bridge } from '@/lib/pipeline/types';
import type { Actor } from '@/lib/shared/intent-types';
import { attemptError } from '@/lib/workers/attempts';

/**
 * How the demo's FAILED intents fail: through the pipeline, as a real one does, so a new user opening one finds
 * why — each attempt with its time, the bridge that failed and its error, and the reason on the FAILED mark.
 *
 * The bridge that fails is the demo's own (a partner ledger that times out, is unavailable, then refuses the
 * account), registered only while the seed runs: the console's BridgeSet does not contain it, so an operator who
 * moves such an intent back to RECEIVED sees the real pipeline take it to COMPLETED.
 */
export const DEMO_LEDGER_BRIDGE = 'partner-ledger';

const ANSWERS: ((reference: string, customer: string) => string)[] = [
  (reference) => `The partner ledger did not answer within 5000 ms (POST /v2/postings, ${reference}).`,
  (reference) => `The partner ledger answered 503 Service Unavailable for ${reference}.`,
  (reference, customer) => `The partner ledger refused ${reference}: account ${customer} is closed (409 account_closed).`,
];

/** The worker the demo's attempts are recorded under (a seed name, like every actor of the demo data). */
const DEMO_WORKER: Actor = { name: 'seed:worker-1' };

function ledgerBridge(answer: string): Bridge {
  return {
    name: DEMO_LEDGER_BRIDGE,
    description: 'Demo data only: posts the amount to a partner ledger.',
    accepts: ['PROCESSED', 'CORRECTED'],
    run: async () => {
      throw new BridgeError(answer, { bridge: DEMO_LEDGER_BRIDGE });
    },
  };
}

/**
 * Runs the pipeline on a RECEIVED intent (held out of the workers' queue) once per answer: input and normalize
 * succeed on the first attempt and are replayed on the next, the ledger fails each time, and the last attempt
 * marks the intent FAILED as a worker's last attempt does. Its queued work is then left as that last attempt leaves
 * it — failed, every attempt used, the last error kept — so the Workers page lists it among the failures, where an
 * operator reruns failed intents several at a time.
 */
export async function failThroughPipeline(id: string, payload: { reference: string; customer: { id: string } }): Promise<void> {
  const bridges = ['input', 'normalize', DEMO_LEDGER_BRIDGE];
  let lastError = 'failed';
  try {
    for (const [n, answer] of ANSWERS.entries()) {
      registerBridge(ledgerBridge(answer(payload.reference, payload.customer.id)), { replace: true });
      const { run } = await runPipeline({ id, mode: 'FAILFAST' }, DEMO_WORKER, { door: 'worker', bridges, failIntentOnFailure: n === ANSWERS.length - 1 });
      lastError = run.error ?? lastError;
    }
  } finally {
    unregisterBridge(DEMO_LEDGER_BRIDGE);
  }
  // A worker's claim statements are what write this row in a real run; the demo ran its attempts without claims, so
  // it writes what they would have left, in the worker's words. A row a running worker took meanwhile is that
  // worker's and is left alone.
  await db().$executeRaw`
    UPDATE intent_work SET state = 'failed', attempt = ${ANSWERS.length}::int, max_attempts = ${ANSWERS.length}::int, claimed_by = ${DEMO_WORKER.name},
                           last_error = ${attemptError(ANSWERS.length, ANSWERS.length, lastError)}, finished_at = now()
    WHERE intent_id = ${id}::uuid AND state IN ('cancelled', 'failed')`;
}
