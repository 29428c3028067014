'use client';

import { useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { changeIntentStatusAction } from '@/app/actions/intents';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { useFocusOutcomeWhenLost } from '@/components/ui/focus';
import type { ActionError } from '@/lib/console/action-result';
import { newIdempotencyKey, shortId } from '@/lib/console/ids';
import { REASON_MAX, reasonProblem, reasonRequired } from '@/lib/console/reasons';
import { refusalVersion, useActionNotice } from '@/lib/console/action-notice';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import { intentKeys } from '@/lib/intents/keys';
import { allowedNextStatuses, type IntentStatus } from '@/lib/shared/intent-states';
import type { IntentWithCorrections } from '@/lib/shared/intent-types';
import { ActionErrorAlert } from './ActionErrorAlert';
import { LockWaitNotice } from './LockWaitNotice';
import styles from './intents.module.css';

const STATUS_ACTION: Partial<Record<IntentStatus, { label: string; confirm?: string; tone?: 'danger' | 'primary' }>> = {
  FAILED: { label: 'Mark as FAILED', confirm: 'It leaves processing until an operator moves it back to RECEIVED or runs the pipeline again.', tone: 'danger' },
  COMPLETED: { label: 'Move to COMPLETED', confirm: 'COMPLETED is final: the intent cannot change status or take corrections afterwards.', tone: 'danger' },
};

type Props = { intent: IntentWithCorrections; allowed: boolean; lockTimeoutMs?: number };

/** The intent's next steps by the state machine, a reason kept in the audit, and a confirmation for the final or failing ones. */
export function StatusActions({ intent, allowed, lockTimeoutMs }: Props) {
  const s = useStatusChange(intent);
  const next = allowedNextStatuses(intent.status);
  const outcome = useRef<HTMLDivElement>(null);
  useFocusOutcomeWhenLost(outcome, s.notice);
  if (!allowed) return <p className="muted">Your roles let you read this intent; changing its status needs the operator role.</p>;
  const go = (to: IntentStatus) => (STATUS_ACTION[to]?.confirm || reasonProblem(to, s.reason) ? s.setConfirming(to) : s.mutation.mutate(to));
  return (
    <div>
      {next.length > 0 && (
        <label className={styles.reasonField}>
          <span>Reason (kept in the audit; required for FAILED)</span>
          <input value={s.reason} onChange={(e) => s.setReason(e.target.value)} maxLength={REASON_MAX} placeholder="Why this change?" data-testid="status-reason" />
        </label>
      )}
      <StatusButtons intent={intent} next={next} disabled={s.mutation.isPending} onGo={go} />
      {/* While the confirm dialog is open (it stays open until the change answers) the notice is in it. */}
      {!s.confirming && <LockWaitNotice pending={s.mutation.isPending} lockTimeoutMs={lockTimeoutMs} intentIds={[intent.id]} />}
      <div ref={outcome} tabIndex={-1} className={styles.outcome}>
        {s.notice?.done && (
          <p className={styles.notice} role="status" style={{ marginTop: '0.6rem' }} data-testid="status-notice">
            {s.notice.done}
          </p>
        )}
        {s.notice?.error && <ActionErrorAlert error={s.notice.error} signInNext={`/intents/${intent.id}`} style={{ marginTop: '0.6rem' }} />}
      </div>
      <StatusConfirm intent={intent} s={s} lockTimeoutMs={lockTimeoutMs} />
    </div>
  );
}

/**
 * The change itself: one idempotency key per form, what came back, and the detail updated in place on success. What
 * came back is shown only while the intent is still at the version it speaks of (lib/console/action-notice.ts).
 */
function useStatusChange(intent: IntentWithCorrections) {
  const queryClient = useQueryClient();
  const [formKey] = useState(() => newIdempotencyKey('status'));
  const [confirming, setConfirming] = useState<IntentStatus | null>(null);
  const { notice, show } = useActionNotice<{ done?: string; error?: ActionError }>(intent.version);
  const [reason, setReason] = useState('');
  const mutation = useActionMutation({
    action: (to: IntentStatus) =>
      // One key per (form, intent version, target): a double click or a retry of the same step applies once.
      changeIntentStatusAction({ id: intent.id, status: to, expectedVersion: intent.version, idempotencyKey: `${formKey}:${intent.version}:${to}`, reason }),
    onOk: (data, to) => {
      setConfirming(null);
      setReason('');
      show({ done: data.alreadyApplied ? `Already ${to}: nothing changed.` : `Moved to ${to} (version ${data.intent.version}).` }, data.intent.version);
      queryClient.setQueryData(intentKeys.detail(intent.id), (old: IntentWithCorrections | undefined) => (old ? { ...old, ...data.intent } : old));
    },
    onFailure: (failure) => {
      setConfirming(null);
      show({ error: failure }, refusalVersion(failure, intent.version));
    },
    invalidate: () => [intentKeys.all],
  });
  return { confirming, setConfirming, notice, reason, setReason, mutation };
}

function StatusButtons({ intent, next, disabled, onGo }: { intent: IntentWithCorrections; next: readonly IntentStatus[]; disabled: boolean; onGo: (to: IntentStatus) => void }) {
  return (
    <div className={styles.actions} role="group" aria-label="Status actions">
      {next.length === 0 ? (
        <span className="muted">{intent.status} is final: no further steps.</span>
      ) : (
        <>
          <span className={styles.actionsLabel}>Next steps:</span>
          {next.map((to) => {
            const meta = STATUS_ACTION[to];
            // FAILED → RECEIVED only moves it back (the workers' queue takes it from there); the pipeline panel's
            // "Run pipeline again" is the one that also runs it at once.
            const label = meta?.label ?? (intent.status === 'FAILED' && to === 'RECEIVED' ? 'Move back to RECEIVED' : `Move to ${to}`);
            return (
              <button key={to} type="button" className={`btn ${meta?.tone === 'danger' ? '' : 'btn-primary'}`} disabled={disabled} onClick={() => onGo(to)}>
                {label}
              </button>
            );
          })}
        </>
      )}
    </div>
  );
}

function StatusConfirm({ intent, s, lockTimeoutMs }: { intent: IntentWithCorrections; s: ReturnType<typeof useStatusChange>; lockTimeoutMs?: number }) {
  const { confirming, reason, mutation } = s;
  const pendingConfirm = confirming && STATUS_ACTION[confirming];
  const confirmProblem = confirming ? reasonProblem(confirming, reason) : null;
  return (
    <ConfirmDialog
      open={Boolean(confirming)}
      // In the button's own words, so the dialog is recognisably the one it opened ("Mark as FAILED").
      title={confirming === 'FAILED' ? `Mark intent ${shortId(intent.id)} as FAILED?` : `Move intent ${shortId(intent.id)} to ${confirming}?`}
      confirmLabel={pendingConfirm ? pendingConfirm.label : confirming ? `Move to ${confirming}` : 'Confirm'}
      tone={pendingConfirm?.tone ?? 'primary'}
      pending={mutation.isPending}
      confirmDisabled={Boolean(confirmProblem)}
      onCancel={() => s.setConfirming(null)}
      onConfirm={() => confirming && !confirmProblem && mutation.mutate(confirming)}
    >
      <p>
        {intent.status} → {confirming} at version {intent.version}. {pendingConfirm?.confirm}
      </p>
      <label className={styles.reasonField}>
        <span>Reason{confirming && reasonRequired(confirming) ? ' (required)' : ' (optional)'}</span>
        <textarea value={reason} onChange={(e) => s.setReason(e.target.value)} maxLength={REASON_MAX} rows={2} data-testid="confirm-reason" aria-invalid={Boolean(confirmProblem) || undefined} />
        {confirmProblem && reason.length === 0 && confirming && reasonRequired(confirming) && <span className="muted">Say why, for whoever retries it later.</span>}
      </label>
      <p className="muted">If someone changes it first, nothing is applied and you will see the new version.</p>
      <LockWaitNotice pending={mutation.isPending} lockTimeoutMs={lockTimeoutMs} intentIds={[intent.id]} />
    </ConfirmDialog>
  );
}
