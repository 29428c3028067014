'use server';

import type { ActionResult } from '@/lib/console/action-result';
import { actionActor } from '@/lib/http/action-actor';
import { DomainError } from '@/lib/intents/errors';
import { cancelScheduledRetry, retryNow, setClaimingPaused } from '@/lib/workers/control';

/** The Workers page's controls: the same domain functions (lib/workers/control.ts), with the signed-in operator as actor. */
async function run<T>(what: string, fn: () => Promise<T>): Promise<ActionResult<T>> {
  try {
    return { ok: true, data: await fn() };
  } catch (err) {
    if (err instanceof DomainError) return { ok: false, error: err.toBody() };
    console.error(`[actions] ${what} failed unexpectedly:`, err);
    return { ok: false, error: { code: 'internal_error', message: 'The server failed to handle this request; nothing was applied by it. Try again, and report it if it persists.' } };
  }
}

export async function setWorkersPausedAction(paused: unknown): Promise<ActionResult<{ paused: boolean; changed: boolean }>> {
  return run('pause/resume workers', async () => {
    const actor = await actionActor('pipeline.run');
    return setClaimingPaused(paused === true, actor);
  });
}

export async function retryNowAction(intentId: unknown): Promise<ActionResult<{ intentId: string; state: string; runAfter: string }>> {
  return run('retry now', async () => retryNow(intentId, await actionActor('pipeline.run')));
}

export async function cancelRetryAction(intentId: unknown): Promise<ActionResult<{ intentId: string; state: string; runAfter: string }>> {
  return run('cancel retry', async () => cancelScheduledRetry(intentId, await actionActor('pipeline.run')));
}
