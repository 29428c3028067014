'use client';

import { useId, useMemo, useState } from 'react';
import { bulkChangeStatusAction } from '@/app/actions/intents';
import type { ActionError } from '@/lib/console/action-result';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import { intentKeys } from '@/lib/intents/keys';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { Intent } from '@/lib/shared/intent-types';
import { BulkConfirm } from './BulkConfirm';
import { BulkOutcome, type BulkResult } from './BulkOutcome';
import { plural } from '@/lib/shared/text';
import { defaultTarget, describeChoice, planBulk, targetChoices } from './bulk-plan';
import styles from './intents.module.css';

type Props = { intents: Intent[]; onDeselect: (ids: string[]) => void; onDone: () => void; lockTimeoutMs?: number };

/**
 * Bulk status change. The target list says, for each status, how many of the selected intents can move there (from
 * the state machine and the statuses on screen); the confirm dialog separates those that move from those that
 * cannot and offers to deselect the latter, because the change is all-or-nothing: the server, which checks again
 * under its locks, refuses all of it if any one cannot move.
 */
export function BulkBar({ intents, onDeselect, onDone, lockTimeoutMs }: Props) {
  const selectId = useId();
  const [chosen, setChosen] = useState<IntentStatus | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [reason, setReason] = useState('');
  const [outcome, setOutcome] = useState<BulkResult>(null);
  const choices = useMemo(() => targetChoices(intents), [intents]);
  const suggested = useMemo(() => defaultTarget(intents), [intents]);
  // A choice stands while it still moves something; otherwise fall back to the suggestion (or none).
  const target = chosen && (choices.find((c) => c.status === chosen)?.moving ?? 0) > 0 ? chosen : suggested;
  const plan = useMemo(() => (target ? planBulk(intents, target) : null), [intents, target]);
  if (intents.length === 0 && chosen) setChosen(null);
  const mutation = useBulkChange({ onDone, setConfirming, setReason, setOutcome });
  const n = intents.length;

  return (
    <>
      {n > 0 && (
        <div className={styles.bulkBar} role="region" aria-label="Bulk actions">
          <strong>{n} selected</strong>
          <button type="button" className="btn btn-sm btn-ghost" onClick={onDone}>
            Clear selection
          </button>
          <span className={styles.bulkSpacer} />
          <span className={styles.inlineLabel}>
            <label htmlFor={selectId}>Move to</label>
            <select
              id={selectId}
              className="field"
              value={target ?? ''}
              onChange={(e) => {
                setOutcome(null);
                setChosen((e.target.value || null) as IntentStatus | null);
              }}
            >
              <option value="" disabled>
                Choose a status…
              </option>
              {choices.map((c) => (
                <option key={c.status} value={c.status} disabled={c.moving === 0}>
                  {c.status} — {describeChoice(c)}
                </option>
              ))}
            </select>
          </span>
          <button type="button" className="btn btn-primary btn-sm" disabled={!target} onClick={() => setConfirming(true)} title={target ? undefined : 'Choose the status to move them to first'}>
            Change status…
          </button>
        </div>
      )}
      <BulkOutcome outcome={outcome} intents={intents} target={target} onDeselect={onDeselect} onDismiss={() => setOutcome(null)} />
      {plan && (
        <BulkConfirm
          plan={plan}
          intents={intents}
          open={confirming && n > 0}
          pending={mutation.isPending}
          reason={reason}
          onReason={setReason}
          onCancel={() => setConfirming(false)}
          onConfirm={() => mutation.mutate({ ids: intents.map((i) => i.id), status: plan.target, reason })}
          onDeselect={onDeselect}
          lockTimeoutMs={lockTimeoutMs}
        />
      )}
    </>
  );
}

/** The change: all or nothing on the server; the dialog closes on any answer, which the bar then says. */
function useBulkChange({ onDone, setConfirming, setReason, setOutcome }: { onDone: () => void; setConfirming: (open: boolean) => void; setReason: (reason: string) => void; setOutcome: (outcome: BulkResult) => void }) {
  return useActionMutation({
    action: (vars: { ids: string[]; status: IntentStatus; reason: string }) => bulkChangeStatusAction(vars),
    onOk: (data, vars) => {
      setConfirming(false);
      setReason('');
      const already = data.alreadyApplied.length;
      setOutcome({ kind: 'ok', text: `${plural(vars.ids.length, 'intent')} now ${vars.status}${already ? ` (${already} already were)` : ''}.` });
      onDone();
    },
    onFailure: (error: ActionError) => {
      setConfirming(false);
      setOutcome({ kind: 'error', error });
    },
    invalidate: () => [intentKeys.all],
  });
}
