'use client';

import { fieldErrors } from '@/lib/console/messages';
import type { IntentWithCorrections } from '@/lib/shared/intent-types';
import { ActionErrorAlert } from './ActionErrorAlert';
import { EditLeaseNotice, useEditLease } from './EditLease';
import { LockWaitNotice } from './LockWaitNotice';
import { ConflictView } from './correction/ConflictView';
import { CorrectionEditor } from './correction/CorrectionEditor';
import { CorrectionFields } from './correction/CorrectionFields';
import type { Outcome } from './correction/types';
import { useCorrection } from './correction/useCorrection';
import styles from './intents.module.css';

/**
 * A reviewer's correction. The form keeps the version it was opened at (not the live one), so a change that got
 * in meanwhile is a conflict the reviewer sees and decides on — re-apply on top, or discard — instead of being
 * silently overwritten. Each form instance has its own idempotency key: a double click applies once.
 */
export function CorrectionForm({ intent, lockTimeoutMs }: { intent: IntentWithCorrections; lockTimeoutMs?: number }) {
  const c = useCorrection(intent);
  const editLease = useEditLease(intent.id);
  const { draft, parsed, touched, outcome, pending } = c;
  const { conflict, opened } = draft;

  if (conflict) {
    return (
      <ConflictView
        key={`${conflict.submission.expectedVersion}:${conflict.changes.intent.version}`}
        conflict={conflict}
        pending={pending}
        onReviewText={(reviewText) => c.update({ conflict: { ...conflict, reviewText } })}
        onReapply={c.reapply}
        onDiscard={c.discard}
        lockTimeoutMs={lockTimeoutMs}
      />
    );
  }

  const serverFieldErrors = outcome?.kind === 'error' ? fieldErrors(outcome.error) : {};
  const stale = intent.version > opened.version;
  const onSubmit = (e: React.FormEvent) => {
    e.preventDefault();
    c.submitDraft();
  };

  return (
    <form className={styles.form} onSubmit={onSubmit} onFocusCapture={() => void editLease.take()} aria-label="Correction" noValidate>
      <EditLeaseNotice held={editLease.held} other={editLease.other} />
      {stale && (
        <p className={styles.staleNote} role="status">
          This intent changed since you opened the form (version {opened.version} → {intent.version}). Your correction is checked against version {opened.version}: if it
          conflicts you will see what changed and decide.
        </p>
      )}
      <CorrectionEditor draft={draft} parsed={parsed} touched={touched} serverError={serverFieldErrors.diff} onUpdate={c.update} onLeave={() => c.setTouched(true)} onSwitch={c.switchMode} />
      <CorrectionFields draft={draft} onChange={c.update} touched={touched} serverErrors={serverFieldErrors} />
      <div className={styles.formFoot}>
        <span className="muted">
          Applies to version <strong data-testid="form-version">{opened.version}</strong>
        </span>
        <button type="submit" className="btn btn-primary" disabled={pending}>
          {pending ? 'Applying…' : 'Apply correction'}
        </button>
      </div>
      <LockWaitNotice pending={pending} lockTimeoutMs={lockTimeoutMs} intentIds={[intent.id]} />
      <CorrectionOutcome outcome={outcome} intentId={intent.id} />
    </form>
  );
}

function CorrectionOutcome({ outcome, intentId }: { outcome: Outcome; intentId: string }) {
  if (outcome?.kind === 'error') return <ActionErrorAlert error={outcome.error} signInNext={`/intents/${intentId}`} />;
  if (outcome?.kind !== 'ok') return null;
  return (
    <p className={styles.notice} role="status">
      {outcome.result.alreadyApplied
        ? `This correction was already applied: nothing changed (version ${outcome.result.version}).`
        : `Correction applied: now version ${outcome.result.version}, ${outcome.result.status}.`}
    </p>
  );
}
