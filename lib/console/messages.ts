import type { ActionError } from './action-result';

/**
 * A title for an error the console shows, by its code; the message itself comes from the domain and already says
 * what happened (a lock timeout names the holder when known, a version conflict both versions).
 */
const TITLES: Record<string, string> = {
  version_conflict: 'Someone changed this intent first',
  invalid_transition: 'Not possible from the current status',
  lock_timeout: 'The intent is locked by another operation',
  deadlock: 'The database broke a deadlock; nothing was applied',
  retries_exhausted: 'Too many concurrent changes; nothing was applied',
  invalid_request: 'Check what you entered',
  not_found: 'This intent no longer exists',
  unauthenticated: 'Your session has ended',
  forbidden: 'Your roles do not allow this',
  idempotency_key_reused: 'This form was already used for a different change',
  idempotency_in_progress: 'Still being applied',
  internal_error: 'The server failed',
  network: 'The console could not reach its server',
};

export function errorTitle(error: ActionError): string {
  return TITLES[error.code] ?? 'That did not work';
}

/** Field messages of a validation error, by field name (`diff`, `reason`, `source`, …). */
export function fieldErrors(error: ActionError | null | undefined): Record<string, string> {
  if (!error || error.code !== 'invalid_request') return {};
  const fields = (error.details as { fields?: { field: string; message: string }[] } | undefined)?.fields ?? [];
  return Object.fromEntries(fields.map((f) => [f.field.split('.')[0], f.message]));
}

/**
 * Where to look at the backend a lock refusal names: the Locks page with it selected (`details.locksPage` of a 423
 * `lock_timeout`, `/locks?pid=<pid>`), and its pid; null for any other error, or a link that is not the Locks page.
 */
export function lockHolderLink(error: Pick<ActionError, 'code' | 'details'> | null | undefined): { href: string; pid: number | null } | null {
  if (error?.code !== 'lock_timeout') return null;
  const details = error.details as { locksPage?: unknown; holderPid?: unknown } | undefined;
  const href = details?.locksPage;
  if (typeof href !== 'string' || !/^\/locks(\?pid=[1-9][0-9]{0,9})?$/.test(href)) return null;
  return { href, pid: typeof details?.holderPid === 'number' ? details.holderPid : null };
}
