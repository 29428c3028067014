'use server';

import { z } from 'zod';
import type { ActionResult } from '@/lib/console/action-result';
import { actionActor } from '@/lib/http/action-actor';
import { DomainError } from '@/lib/intents/errors';
import { retryPipeline, runPipeline } from '@/lib/pipeline/run';
import type { PipelineResult } from '@/lib/pipeline/types';

/**
 * The console's doors into the pipeline: the same domain functions as POST /api/intents/:id/pipeline, with the
 * signed-in user as the actor. The domain validates the fields; errors come back as results the page shows.
 */
const objectInput = z.record(z.string(), z.unknown(), { error: 'must be an object' });

async function run<T>(what: string, fn: () => Promise<T>): Promise<ActionResult<T>> {
  try {
    return { ok: true, data: await fn() };
  } catch (err) {
    if (err instanceof DomainError) return { ok: false, error: err.toBody() };
    console.error(`[actions] ${what} failed unexpectedly:`, err);
    return { ok: false, error: { code: 'internal_error', message: 'The server failed to handle this request; nothing was applied by it. Try again, and report it if it persists.' } };
  }
}

const envelope = (input: unknown) => {
  const parsed = objectInput.safeParse(input);
  return parsed.success ? parsed.data : {};
};

/** "Run pipeline" on the intent page. */
export async function runPipelineAction(input: unknown): Promise<ActionResult<PipelineResult>> {
  return run('pipeline run', async () => {
    const actor = await actionActor('pipeline.run');
    const { id, mode } = envelope(input);
    return runPipeline({ id, mode } as never, actor, { door: 'console' });
  });
}

/** "Retry" on a FAILED intent: back to RECEIVED (at the version the operator saw), then the pipeline. */
export async function retryPipelineAction(input: unknown): Promise<ActionResult<PipelineResult>> {
  return run('pipeline retry', async () => {
    const actor = await actionActor('pipeline.run');
    const { id, mode, expectedVersion } = envelope(input);
    return retryPipeline({ id, mode, expectedVersion } as never, actor, { door: 'console' });
  });
}
