'use server';

import { z } from 'zod';
import { actionActor } from '@/lib/http/action-actor';
import type { ActionResult } from '@/lib/console/action-result';
import { runAction } from '@/lib/http/action-run';
import { currentEditLease, releaseEditLease, renewEditLease, takeEditLease, type EditLease, type HeldEditLease } from '@/lib/leases/edit';

/**
 * The console's doors to reviewers' edit leases (lib/leases/edit.ts): the signed-in user is the lease's owner.
 * Same domain functions as everything else; errors come back as results the form shows.
 */
const objectInput = z.record(z.string(), z.unknown(), { error: 'must be an object' });
const envelope = (input: unknown) => {
  const parsed = objectInput.safeParse(input);
  return parsed.success ? parsed.data : {};
};

const run = <T>(what: string, fn: () => Promise<T>) => runAction(what, fn);

export async function takeEditLeaseAction(input: unknown): Promise<ActionResult<EditLease>> {
  return run('taking an edit lease', async () => {
    const actor = await actionActor('leases.use');
    return takeEditLease(envelope(input).intentId, actor);
  });
}

export async function renewEditLeaseAction(input: unknown): Promise<ActionResult<{ expiresAt: string }>> {
  return run('renewing an edit lease', async () => {
    const actor = await actionActor('leases.use');
    const { intentId, token } = envelope(input);
    return renewEditLease(intentId, token, actor);
  });
}

export async function releaseEditLeaseAction(input: unknown): Promise<ActionResult<{ released: boolean }>> {
  return run('releasing an edit lease', async () => {
    const actor = await actionActor('leases.use');
    const { intentId, token } = envelope(input);
    return releaseEditLease(intentId, token, actor);
  });
}

export async function currentEditLeaseAction(input: unknown): Promise<ActionResult<HeldEditLease | null>> {
  return run('reading an edit lease', async () => {
    const viewer = await actionActor('intents.read');
    return currentEditLease(envelope(input).intentId, viewer.name);
  });
}
