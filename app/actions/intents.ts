'use server';

import { actionActor } from '@/lib/http/action-actor';
import { actionInput } from '@/lib/http/action-input';
import { runAction } from '@/lib/http/action-run';
import type { ActionResult } from '@/lib/console/action-result';
import { getChangesSince } from '@/lib/intents/changes-since';
import { bulkUpdateStatus, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { reasonProblem } from '@/lib/console/reasons';
import { VersionConflictError } from '@/lib/intents/errors';
import { ValidationError } from '@/lib/shared/errors';
import { bulkStatusSchema, reevaluateInputSchema, updateStatusInputSchema } from '@/lib/intents/schemas';
import type { BulkStatusResult, ReevaluateResult, UpdateStatusResult } from '@/lib/shared/intent-types';

/**
 * The console's doors into the intent engine: the same domain functions as the JSON API (lib/intents/commands),
 * with the signed-in user as the actor. Each validates its input once with the domain's schema (actionInput) and
 * turns errors into results the page shows.
 */

/**
 * The console's reason rule (lib/console/reasons: required for FAILED), checked before the engine is asked, so a
 * refusal changes nothing. The engine keeps the reason in the audit; the API leaves it optional.
 */
function checkReason(input: unknown): void {
  const { status, reason } = (input ?? {}) as { status?: unknown; reason?: unknown };
  const problem = reasonProblem(typeof status === 'string' ? status : null, reason);
  if (problem) throw new ValidationError([{ field: 'reason', message: problem }]);
}

const run = <T>(what: string, fn: () => Promise<T>) =>
  runAction(what, fn, 'The server failed to handle this request; nothing was applied by it. Try again, and report it if it persists.');

/** One intent to a new status, at the version the operator was looking at. */
export async function changeIntentStatusAction(input: unknown): Promise<ActionResult<UpdateStatusResult>> {
  return run('status change', async () => {
    const actor = await actionActor('intents.status');
    checkReason(input);
    return updateIntentStatus(actionInput(updateStatusInputSchema, input), actor);
  });
}

/** Several intents to one status: locked in id order, all or nothing; refusals name each intent. */
export async function bulkChangeStatusAction(input: unknown): Promise<ActionResult<BulkStatusResult>> {
  return run('bulk status change', async () => {
    const actor = await actionActor('intents.bulk');
    checkReason(input);
    return bulkUpdateStatus(actionInput(bulkStatusSchema, input), actor);
  });
}

/**
 * A reviewer's correction, at the version the form was opened at. On a version conflict the result carries what
 * the reviewer needs to decide (the intent now and the changes since), so the page can show the three-way view.
 */
export async function correctIntentAction(input: unknown): Promise<ActionResult<ReevaluateResult>> {
  const result = await run('correction', async () => {
    const actor = await actionActor('intents.correct');
    return reevaluateIntent(actionInput(reevaluateInputSchema, input), actor);
  });
  if (result.ok || result.error.code !== 'version_conflict') return result;
  const details = result.error.details as VersionConflictError['details'] & { intentId: string; expectedVersion: number };
  try {
    const changes = await getChangesSince(details.intentId, details.expectedVersion);
    return { ok: false, error: { ...result.error, details: { ...details, changes } } };
  } catch {
    return result;
  }
}
