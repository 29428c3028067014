'use client';

import { useEffect, useRef, useState } from 'react';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { shortId } from '@/lib/console/ids';
import { REASON_MAX, reasonProblem, reasonRequired } from '@/lib/console/reasons';
import type { Intent } from '@/lib/shared/intent-types';
import { plural } from '@/lib/shared/text';
import type { BulkPlan } from './bulk-plan';
import { LockWaitNotice } from './LockWaitNotice';
import styles from './intents.module.css';

type Props = {
  plan: BulkPlan<Intent>;
  intents: Intent[];
  open: boolean;
  pending: boolean;
  reason: string;
  onReason: (reason: string) => void;
  onCancel: () => void;
  onConfirm: () => void;
  onDeselect: (ids: string[]) => void;
  lockTimeoutMs?: number;
};

/** The bulk change's confirmation: what moves, what already is there, what cannot (with a way to deselect it), and the reason. */
export function BulkConfirm({ plan, intents, open, pending, reason, onReason, onCancel, onConfirm, onDeselect, lockTimeoutMs }: Props) {
  const [deselectedNote, setDeselectedNote] = useState<string | null>(null);
  const noteRef = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    // The deselect button is gone once used: the note that replaces it takes the focus, inside the dialog.
    if (deselectedNote) noteRef.current?.focus();
  }, [deselectedNote]);
  const n = intents.length;
  const deselectBlocked = () => {
    const ids = plan.blocked.map((b) => b.intent.id);
    onDeselect(ids);
    setDeselectedNote(`Deselected ${ids.map(shortId).join(', ')}. ${plural(plan.moving.length + plan.already.length, 'intent')} left, all of which can move to ${plan.target}.`);
  };
  return (
    <ConfirmDialog
      open={open}
      title={`Move ${plural(n, 'intent')} to ${plan.target}?`}
      confirmLabel={`Move ${n} to ${plan.target}`}
      tone={plan.target === 'FAILED' || plan.target === 'COMPLETED' || plan.blocked.length > 0 ? 'danger' : 'primary'}
      pending={pending}
      confirmDisabled={Boolean(reasonProblem(plan.target, reason))}
      onCancel={() => {
        onCancel();
        setDeselectedNote(null);
      }}
      onConfirm={onConfirm}
    >
      {plan.blocked.length > 0 ? (
        <div className={styles.bulkWarning} data-testid="bulk-blocked-warning">
          <p>
            <strong>
              {plan.blocked.length} of {n} cannot move to {plan.target}.
            </strong>{' '}
            A bulk change is all-or-nothing: as selected, it will be refused and nothing will change. Deselect {plan.blocked.length === 1 ? 'it' : 'them'} to move the
            other {plan.moving.length + plan.already.length}.
          </p>
          <button type="button" className="btn btn-sm" onClick={deselectBlocked} disabled={pending}>
            Deselect the {plan.blocked.length} that cannot move
          </button>
        </div>
      ) : (
        <p>
          {n === 1 ? 'It is locked for the change, so nobody else changes it meanwhile.' : `All ${n} change together or none does: they are locked in id order, so this cannot deadlock with another bulk change.`}
          {plan.target === 'COMPLETED' && ` COMPLETED is final: ${n === 1 ? 'it' : 'they'} cannot be moved again.`}
          {plan.target === 'FAILED' && ' Failed intents leave processing until an operator retries them.'}
        </p>
      )}
      {deselectedNote && (
        <p ref={noteRef} tabIndex={-1} role="status" className={styles.deselectedNote}>
          {deselectedNote}
        </p>
      )}
      <PlanLists plan={plan} />
      <label className={styles.reasonField}>
        <span>Reason, kept in the audit{reasonRequired(plan.target) ? ' (required)' : ' (optional)'}</span>
        <textarea value={reason} onChange={(e) => onReason(e.target.value)} maxLength={REASON_MAX} rows={2} data-testid="bulk-reason" />
      </label>
      <LockWaitNotice pending={pending} lockTimeoutMs={lockTimeoutMs} plural={n > 1} intentIds={plan.moving.map((m) => m.id)} />
    </ConfirmDialog>
  );
}

function PlanLists({ plan }: { plan: BulkPlan<Intent> }) {
  return (
    <>
      <MoveList label="Will move" heading={`Will move (${plan.moving.length})`} items={plan.moving.map((i) => ({ id: i.id, text: `${i.status} → ${plan.target}` }))} />
      <MoveList label="Already there" heading={`Already ${plan.target}, nothing changes (${plan.already.length})`} items={plan.already.map((i) => ({ id: i.id, text: `already ${i.status}` }))} />
      <MoveList
        label="Cannot move"
        heading={`Cannot move to ${plan.target} (${plan.blocked.length})`}
        tone="danger"
        items={plan.blocked.map(({ intent, allowed }) => ({
          id: intent.id,
          text: `is ${intent.status}: ${allowed.length ? `it can only move to ${allowed.join(' or ')}` : 'it is final'}`,
        }))}
      />
    </>
  );
}

const LIST_LIMIT = 8;

function MoveList({ label, heading, items, tone }: { label: string; heading: string; items: { id: string; text: string }[]; tone?: 'danger' }) {
  if (items.length === 0) return null;
  return (
    <section className={styles.moveGroup}>
      <h3 className={`${styles.moveHeading} ${tone === 'danger' ? styles.moveHeadingDanger : ''}`}>{heading}</h3>
      <ul className={styles.confirmList} aria-label={label}>
        {items.slice(0, LIST_LIMIT).map((item) => (
          <li key={item.id}>
            <span className="mono">{shortId(item.id)}</span> {item.text}
          </li>
        ))}
        {items.length > LIST_LIMIT && <li>…and {items.length - LIST_LIMIT} more</li>}
      </ul>
    </section>
  );
}
