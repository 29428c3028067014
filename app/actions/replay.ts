'use server';

import type { ActionResult } from '@/lib/console/action-result';
import { actionActor } from '@/lib/http/action-actor';
import { actionInput } from '@/lib/http/action-input';
import { runAction } from '@/lib/http/action-run';
import { cancelReplay, startReplayInBackground, startReplaySchema } from '@/lib/replay/runner';
import { summarizeRun, type RunSummary } from '@/lib/replay/summary';

/**
 * The Replay page's button and its cancel. Both need `replay.run`; the start also goes through the environment
 * guard in the domain (startReplay refuses in production whatever the page showed), and the run then executes in
 * the background of this server process while the page polls its row.
 */
/** What the page may choose: scenarios, size and strategies (sizes and targets are the CLI's). */
const pageChoices = startReplaySchema.pick({ scenarios: true, size: true, strategies: true });

const run = <T>(what: string, fn: () => Promise<T>) => runAction(what, fn, undefined, 'replay');

/** Starts a run of the chosen scenarios (`all` by default) at `full` or `small` size, with the configured strategies or its own. */
export async function startReplayAction(input: unknown): Promise<ActionResult<RunSummary>> {
  return run('starting a replay', async () => {
    const actor = await actionActor('replay.run');
    return summarizeRun(await startReplayInBackground(actionInput(pageChoices, input), { name: actor.name }));
  });
}

/** Asks the running run to stop; it stops between steps and is recorded as cancelled, with what it finished. */
export async function cancelReplayAction(runId: unknown): Promise<ActionResult<{ runId: string }>> {
  return run('cancelling a replay', async () => {
    const actor = await actionActor('replay.run');
    await cancelReplay(typeof runId === 'string' ? runId : '', { name: actor.name });
    return { runId: String(runId) };
  });
}
