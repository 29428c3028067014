'use server';

import type { ActionResult } from '@/lib/console/action-result';
import { actionActor } from '@/lib/http/action-actor';
import { actionInput } from '@/lib/http/action-input';
import { runAction } from '@/lib/http/action-run';
import { baselineInputSchema, setBaselineForUser, type BaselineChange } from '@/lib/replay/pinning';
import { cancelReplayForUser, consoleReplaySchema, startReplayForUser } from '@/lib/replay/runner';
import { summarizeRun, type RunSummary } from '@/lib/replay/summary';

/**
 * The Replay page's button and its cancel: the same domain functions as `POST /api/replay/runs` (permission,
 * environment guard, one run at a time); the run then executes in the background of this server process while the
 * page polls its row.
 */
const run = <T>(what: string, fn: () => Promise<T>) => runAction(what, fn, undefined, 'replay');

/** Starts a run of the chosen scenarios (`all` by default) at `full` or `small` size, with the configured strategies or its own. */
export async function startReplayAction(input: unknown): Promise<ActionResult<RunSummary>> {
  return run('starting a replay', async () => {
    const actor = await actionActor('replay.run');
    return summarizeRun(await startReplayForUser(actor, actionInput(consoleReplaySchema, input), 'console'));
  });
}

/** Asks the running run to stop; it stops between steps and is recorded as cancelled, with what it finished. */
export async function cancelReplayAction(runId: unknown): Promise<ActionResult<{ runId: string }>> {
  return run('cancelling a replay', async () => cancelReplayForUser(await actionActor('replay.run'), runId));
}

/** Pins the run as the baseline later runs are compared with (`pinned: true`), or unpins it: the same domain function as `POST /api/replay/runs/{id}/baseline`. */
export async function setReplayBaselineAction(input: unknown): Promise<ActionResult<BaselineChange>> {
  return run('pinning a replay baseline', async () => setBaselineForUser(await actionActor('replay.run'), actionInput(baselineInputSchema, input)));
}
