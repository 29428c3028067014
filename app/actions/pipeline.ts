'use server';

import type { ActionResult } from '@/lib/console/action-result';
import { actionActor } from '@/lib/http/action-actor';
import { actionInput } from '@/lib/http/action-input';
import { runAction } from '@/lib/http/action-run';
import { retryPipeline, retryPipelineInputSchema, runPipeline, runPipelineInputSchema } from '@/lib/pipeline/run';
import type { PipelineResult } from '@/lib/pipeline/types';

/**
 * The console's doors into the pipeline: the same domain functions as POST /api/intents/:id/pipeline, with the
 * signed-in user as the actor, each validating its input once with the domain's schema.
 */
const run = <T>(what: string, fn: () => Promise<T>) =>
  runAction(what, fn, 'The server failed to handle this request; nothing was applied by it. Try again, and report it if it persists.');

/** "Run pipeline" on the intent page. */
export async function runPipelineAction(input: unknown): Promise<ActionResult<PipelineResult>> {
  return run('pipeline run', async () => {
    const actor = await actionActor('pipeline.run');
    return runPipeline(actionInput(runPipelineInputSchema, input), actor, { door: 'console' });
  });
}

/** "Retry" on a FAILED intent: back to RECEIVED (at the version the operator saw), then the pipeline. */
export async function retryPipelineAction(input: unknown): Promise<ActionResult<PipelineResult>> {
  return run('pipeline retry', async () => {
    const actor = await actionActor('pipeline.run');
    return retryPipeline(actionInput(retryPipelineInputSchema, input), actor, { door: 'console' });
  });
}
