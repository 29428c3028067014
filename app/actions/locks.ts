'use server';

import { rememberCommitInSession, requireActionActor } from '@/lib/auth/server';
import { asDomainError } from '@/lib/http/respond';
import { ValidationError } from '@/lib/shared/errors';
import type { UnblockImpact } from '@/lib/locks/types';
import { cancelBackend, recentCancelExists, terminateBackend, unblockImpact, type UnblockResult } from '@/lib/locks/unblock';

/**
 * Locks page actions for the on-call role: read the impact of stopping a backend, then cancel it, then (only if
 * that did not help) terminate it. The domain (lib/locks/unblock.ts) enforces the order, the reason and the
 * permission again; these only pass through the signed-in actor and turn errors into results the form shows.
 */
export type UnblockState = {
  status: 'idle' | 'ok' | 'error';
  message?: string;
  code?: string;
  fieldErrors?: Record<string, string>;
  result?: UnblockResult;
};

function failure(err: unknown, what: string): UnblockState {
  if (err instanceof ValidationError) {
    return { status: 'error', code: err.code, message: err.message, fieldErrors: Object.fromEntries(err.issues.map((i) => [i.field, i.message])) };
  }
  const known = asDomainError(err);
  if (known) return { status: 'error', code: known.code, message: known.message };
  console.error(`[locks] ${what} failed unexpectedly:`, err);
  return { status: 'error', code: 'internal_error', message: 'Something went wrong on the server; check the Locks page before trying again.' };
}

const text = (form: unknown, name: string) => {
  const value = form instanceof FormData ? form.get(name) : null;
  return typeof value === 'string' ? value : '';
};

const sessions = (n: number) => (n === 1 ? '1 session' : `${n} sessions`);

function describe(result: UnblockResult): string {
  const verb = result.action === 'cancel' ? 'Cancel' : 'Terminate';
  if (!result.signalled) return `${verb} was not delivered: backend ${result.pid} had already gone.`;
  if (!result.after) return `${verb} signal sent to backend ${result.pid}; its effect could not be read back (the database is under pressure).`;
  if (!result.after.alive) {
    const { waitingBehind, heldIntentRows } = result.impact;
    const freed =
      waitingBehind > 0
        ? `the ${waitingBehind === 1 ? 'session' : sessions(waitingBehind)} waiting behind it can go on`
        : heldIntentRows.length > 0
          ? `the ${heldIntentRows.length === 1 ? 'intent row' : `${heldIntentRows.length} intent rows`} it held ${heldIntentRows.length === 1 ? 'is' : 'are'} free again`
          : 'nobody was waiting behind it at that moment';
    return `Backend ${result.pid} has ended and its transaction was rolled back; ${freed}.`;
  }
  if (result.after.waitingBehind === 0) {
    return result.action === 'cancel'
      ? `Backend ${result.pid}'s query was cancelled and its transaction rolled back: nobody waits behind it any more.`
      : `Backend ${result.pid} no longer blocks anyone.`;
  }
  return result.action === 'cancel'
    ? `Cancel sent, but backend ${result.pid} still blocks ${sessions(result.after.waitingBehind)}` +
        (result.impact.state === 'idle in transaction' ? ' — it is idle in its transaction, so there was no query to cancel.' : '.') +
        ' Terminate is now available.'
    : `Terminate sent, but backend ${result.pid} still blocks ${sessions(result.after.waitingBehind)}; refresh in a moment.`;
}

export type ImpactAnswer = { impact?: UnblockImpact; cancelTried?: boolean; error?: string; code?: string };

/** The impact of stopping `pid`, and whether a cancel of it was already tried (then terminate is on offer). */
export async function unblockImpactAction(pid: number): Promise<ImpactAnswer> {
  try {
    await requireActionActor('locks.cancel');
    if (!Number.isInteger(pid) || pid <= 0 || pid > 2_147_483_647) return { error: 'pid must be a backend pid (a positive whole number)', code: 'invalid_request' };
    const impact = await unblockImpact(pid);
    return { impact, cancelTried: await recentCancelExists(impact.pid, impact.backendStart) };
  } catch (err) {
    const f = failure(err, 'reading the impact');
    return { error: f.message, code: f.code };
  }
}

export async function cancelBackendAction(_prev: UnblockState, form: FormData): Promise<UnblockState> {
  try {
    const actor = await requireActionActor('locks.cancel');
    const result = await cancelBackend(actor, { pid: text(form, 'pid'), reason: text(form, 'reason') });
    await rememberCommitInSession();
    return { status: 'ok', result, message: describe(result) };
  } catch (err) {
    return failure(err, 'cancelling a backend');
  }
}

export async function terminateBackendAction(_prev: UnblockState, form: FormData): Promise<UnblockState> {
  try {
    const actor = await requireActionActor('locks.terminate');
    const result = await terminateBackend(actor, { pid: text(form, 'pid'), reason: text(form, 'reason') });
    await rememberCommitInSession();
    return { status: 'ok', result, message: describe(result) };
  } catch (err) {
    return failure(err, 'terminating a backend');
  }
}
