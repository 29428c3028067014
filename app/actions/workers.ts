'use server';

import type { ActionResult } from '@/lib/console/action-result';
import { actionActor } from '@/lib/http/action-actor';
import { actionInput } from '@/lib/http/action-input';
import { runAction } from '@/lib/http/action-run';
import { cancelScheduledRetry, queuedIntentSchema, retryNow, setClaimingPaused, workersPausedSchema } from '@/lib/workers/control';

/**
 * The Workers page's controls: the same domain functions (lib/workers/control.ts), with the signed-in operator as
 * actor. Each validates its input once (a value that is not the form's, such as `paused: "yes"`, is refused naming
 * the field, and changes nothing).
 */
const run = <T>(what: string, fn: () => Promise<T>) =>
  runAction(what, fn, 'The server failed to handle this request; nothing was applied by it. Try again, and report it if it persists.');

export async function setWorkersPausedAction(input: unknown): Promise<ActionResult<{ paused: boolean; changed: boolean }>> {
  return run('pause/resume workers', async () => {
    const actor = await actionActor('pipeline.run');
    return setClaimingPaused(actionInput(workersPausedSchema, input).paused, actor);
  });
}

export async function retryNowAction(input: unknown): Promise<ActionResult<{ intentId: string; state: string; runAfter: string }>> {
  return run('retry now', async () => {
    const actor = await actionActor('pipeline.run');
    return retryNow(actionInput(queuedIntentSchema, input).intentId, actor);
  });
}

export async function cancelRetryAction(input: unknown): Promise<ActionResult<{ intentId: string; state: string; runAfter: string }>> {
  return run('cancel retry', async () => {
    const actor = await actionActor('pipeline.run');
    return cancelScheduledRetry(actionInput(queuedIntentSchema, input).intentId, actor);
  });
}
