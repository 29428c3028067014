/**
 * Every action the global audit page can show, where it is recorded, and how a person reads it. Intent-side
 * actions live in audit_events (written by the engine, the unblock guard, bulk batches, the pipeline's runs and
 * steps, and the contention replay's runs and pinned baseline); security actions in
 * auth_events (sign-ins, users, tokens). The page's action filter offers exactly this list.
 */
export type AuditSource = 'intent' | 'auth';

export const AUDIT_ACTIONS = {
  created: { source: 'intent', label: 'Intent created' },
  status_change: { source: 'intent', label: 'Status change' },
  status_change_refused: { source: 'intent', label: 'Status change refused' },
  bulk_status_change: { source: 'intent', label: 'Status change in a bulk batch' },
  bulk_batch: { source: 'intent', label: 'Bulk batch' },
  correction: { source: 'intent', label: 'Correction' },
  backend_cancel: { source: 'intent', label: 'Backend cancelled (Locks)' },
  backend_terminate: { source: 'intent', label: 'Backend terminated (Locks)' },
  backend_cancel_refused: { source: 'intent', label: 'Backend cancel refused (Locks)' },
  backend_terminate_refused: { source: 'intent', label: 'Backend terminate refused (Locks)' },
  pipeline_started: { source: 'intent', label: 'Pipeline run started' },
  bridge_started: { source: 'intent', label: 'Pipeline step started' },
  bridge_completed: { source: 'intent', label: 'Pipeline step completed' },
  bridge_failed: { source: 'intent', label: 'Pipeline step failed' },
  bridge_skipped: { source: 'intent', label: 'Pipeline step skipped' },
  bridge_replayed: { source: 'intent', label: 'Pipeline step replayed' },
  bridge_waiting: { source: 'intent', label: 'Pipeline step waiting for an answer' },
  pipeline_finished: { source: 'intent', label: 'Pipeline run finished' },
  pipeline_released: { source: 'intent', label: 'Pipeline run given back before it started' },
  claim_rescued: { source: 'intent', label: 'Worker claim rescued (its worker stopped heartbeating)' },
  retry_now: { source: 'intent', label: 'Queued work made due now (Workers)' },
  cancel_retry: { source: 'intent', label: 'Taken out of the work queue (Workers)' },
  workers_paused: { source: 'intent', label: 'Claiming paused for every worker' },
  workers_resumed: { source: 'intent', label: 'Claiming resumed for every worker' },
  wait_opened: { source: 'intent', label: 'Wait for an answer opened' },
  wait_answered: { source: 'intent', label: 'Answer to a wait' },
  wait_timed_out: { source: 'intent', label: 'Wait deadline fired' },
  wait_resumed: { source: 'intent', label: 'Run resumed after a wait' },
  replay_started: { source: 'intent', label: 'Replay run started' },
  replay_finished: { source: 'intent', label: 'Replay run finished' },
  replay_baseline_pinned: { source: 'intent', label: 'Replay baseline pinned' },
  replay_baseline_unpinned: { source: 'intent', label: 'Replay baseline unpinned' },
  'auth.sign_in': { source: 'auth', label: 'Signed in' },
  'auth.sign_in_failed': { source: 'auth', label: 'Sign-in refused' },
  'auth.sign_out': { source: 'auth', label: 'Signed out' },
  'auth.password_changed': { source: 'auth', label: 'Password changed' },
  'user.created': { source: 'auth', label: 'User created' },
  'user.roles_changed': { source: 'auth', label: 'User roles changed' },
  'user.disabled': { source: 'auth', label: 'User disabled' },
  'user.enabled': { source: 'auth', label: 'User enabled' },
  'user.password_reset': { source: 'auth', label: 'Password reset by an admin' },
  'user.sign_in_unlocked': { source: 'auth', label: 'Sign-in unlocked' },
  'token.created': { source: 'auth', label: 'API token created' },
  'token.revoked': { source: 'auth', label: 'API token revoked' },
  'bootstrap.admin_created': { source: 'auth', label: 'First admin created' },
  'bootstrap.token_provisioned': { source: 'auth', label: 'API token provisioned at start-up' },
} as const satisfies Record<string, { source: AuditSource; label: string }>;

export type AuditAction = keyof typeof AUDIT_ACTIONS;
export const AUDIT_ACTION_NAMES = Object.keys(AUDIT_ACTIONS) as AuditAction[];

export function isAuditAction(value: string): value is AuditAction {
  return Object.hasOwn(AUDIT_ACTIONS, value);
}

/** A person's name for an action; an action this list does not know yet is shown as recorded. */
export function auditActionLabel(action: string): string {
  return isAuditAction(action) ? AUDIT_ACTIONS[action].label : action;
}
