'use server';

import { requireActionActor } from '@/lib/auth/server';
import type { ActionResult } from '@/lib/console/action-result';
import { cancelBatch, getBatch, previewBatch, startBatch, type BatchPreview, type BatchView } from '@/lib/bulk/batches';
import { runAction } from '@/lib/http/action-run';

/**
 * The Intents page's doors into bulk batches (lib/bulk/batches.ts): preview, start, follow and cancel. The domain
 * checks the permission, the input and the reason again; these pass the signed-in actor and return results.
 */
const run = <T>(what: string, fn: () => Promise<T>) => runAction(what, fn, 'The server failed to handle this request; nothing was started by it. Try again.');

export async function previewBatchAction(input: unknown): Promise<ActionResult<BatchPreview>> {
  return run('bulk preview', async () => {
    await requireActionActor('intents.bulk');
    return previewBatch(input);
  });
}

export async function startBatchAction(input: unknown): Promise<ActionResult<BatchView>> {
  return run('bulk start', async () => startBatch(await requireActionActor('intents.bulk'), input));
}

export async function getBatchAction(id: unknown): Promise<ActionResult<BatchView>> {
  return run('bulk progress', async () => {
    await requireActionActor('intents.read');
    return getBatch(typeof id === 'string' ? id : '');
  });
}

export async function cancelBatchAction(id: unknown): Promise<ActionResult<BatchView>> {
  return run('bulk cancel', async () => cancelBatch(await requireActionActor('intents.bulk'), typeof id === 'string' ? id : ''));
}
