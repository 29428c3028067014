'use server';

import type { ActionResult } from '@/lib/console/action-result';
import { actionActor } from '@/lib/http/action-actor';
import { actionInput } from '@/lib/http/action-input';
import { runAction } from '@/lib/http/action-run';
import { retryPipeline, retryPipelineInputSchema, runPipeline, runPipelineInputSchema } from '@/lib/pipeline/run';
import type { PipelineResult } from '@/lib/pipeline/types';
import { planRerun, rerunInputSchema, rerunPipeline, rerunPlanInputSchema, type RerunPlan, type RerunResult } from '@/lib/pipeline/rerun';
import { answerInputSchema, answerWait, type AnswerResult } from '@/lib/pipeline/waits';
import { planRerunMany, rerunMany, rerunManyPlanSchema, rerunManySchema, type RerunManyPlan, type RerunManyResult } from '@/lib/pipeline/rerun-many';

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

/** The plan of a rerun from a step, before the operator confirms it (the same function GET …/pipeline/plan answers with). */
export async function planRerunAction(input: unknown): Promise<ActionResult<RerunPlan>> {
  return run('rerun plan', async () => {
    await actionActor('pipeline.run');
    return planRerun(actionInput(rerunPlanInputSchema, input));
  });
}

/** "Rerun from a step" on the intent page: the confirmed plan, with the operator's reason. */
export async function rerunPipelineAction(input: unknown): Promise<ActionResult<RerunResult>> {
  return run('pipeline rerun', async () => {
    const actor = await actionActor('pipeline.run');
    return rerunPipeline(actionInput(rerunInputSchema, input), actor, { door: 'console' });
  });
}

/** The Workers page's failed list: the summed plan of a rerun of several intents (chosen, or all matching a filter). */
export async function planRerunManyAction(input: unknown): Promise<ActionResult<RerunManyPlan>> {
  return run('rerun plan', async () => {
    await actionActor('pipeline.run');
    return planRerunMany(actionInput(rerunManyPlanSchema, input));
  });
}

/** Reruns the intents the summed plan listed, each from the chosen bridge, with one reason. */
export async function rerunManyAction(input: unknown): Promise<ActionResult<RerunManyResult>> {
  return run('pipeline rerun', async () => {
    const actor = await actionActor('pipeline.run');
    return rerunMany(actionInput(rerunManySchema, input), actor, { door: 'console' });
  });
}

/** The intent page's answer to a bridge's wait (a person's decision): the same function as POST …/pipeline/answers. */
export async function answerWaitAction(input: unknown): Promise<ActionResult<AnswerResult>> {
  return run('wait answer', async () => {
    const actor = await actionActor('pipeline.run');
    return answerWait(actionInput(answerInputSchema, input), actor);
  });
}
