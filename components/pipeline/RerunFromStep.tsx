'use client';

import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { rerunPipelineAction } from '@/app/actions/pipeline';
import styles from '@/components/locks/console.module.css';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { ErrorState } from '@/components/ui/ErrorState';
import { Skeleton } from '@/components/ui/Skeleton';
import { shortId } from '@/lib/console/ids';
import { fetchRerunPlan, rerunKeys } from '@/lib/console/rerun-client';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import { intentKeys } from '@/lib/intents/keys';
import type { ActionError } from '@/lib/console/action-result';
import type { IntentStatus } from '@/lib/shared/intent-states';
import { RerunPlanView } from './RerunPlanView';
import own from './rerun.module.css';
import { BridgePicker } from './BridgePicker';

type Props = { id: string; status: IntentStatus | undefined; bridges: string[]; canRun: boolean };
/** What the rerun says afterwards, and the intent's version it speaks of (the banner goes once the intent moves past it). */
export type RerunMessage = { tone: 'ok' | 'error'; text: string; error?: ActionError; atVersion: number };

/**
 * "Rerun from a step…" on the intent page: pick the bridge, read the plan (the same one the API answers and the rerun
 * runs), give a reason, confirm. The plan follows the intent live, so an operator who corrects the payload first sees
 * the plan made on the corrected payload.
 */
export function RerunFromStep({ id, status, bridges, canRun, onDone }: Props & { onDone: (m: RerunMessage) => void }) {
  const [open, setOpen] = useState(false);
  const [fromBridge, setFromBridge] = useState(bridges[0] ?? '');
  const [reason, setReason] = useState('');
  // A refused rerun is said here, in the dialog, with the reason kept: the pipeline card's banner would go at once,
  // since the refusal is usually that the intent moved on.
  const [refused, setRefused] = useState<ActionError | null>(null);
  const plan = useQuery({ queryKey: rerunKeys.plan(id, fromBridge), queryFn: () => fetchRerunPlan(id, fromBridge), enabled: open && fromBridge !== '', retry: false });
  // A plan the intent's latest change made impossible is not offered, even while its last answer is still at hand.
  const planned = plan.error ? undefined : plan.data;
  const rerun = useActionMutation({
    action: () => rerunPipelineAction({ id, fromBridge, reason, expectedVersion: plan.data?.intent.version }),
    onOk: (data) => {
      onDone({ tone: 'ok', text: `Rerun from ${fromBridge}: run ${data.run.status.replace(/_/g, ' ')} (round ${data.run.round}); the intent is ${data.intent.status}.`, atVersion: data.intent.version });
      setOpen(false);
      setReason('');
    },
    onFailure: setRefused,
    invalidate: () => [intentKeys.detail(id)],
  });
  if (!status || status === 'COMPLETED' || bridges.length === 0) return null;
  const noReason = reason.trim() === '';
  return (
    <>
      <button type="button" className="btn btn-sm" disabled={!canRun || rerun.isPending} title={canRun ? 'Pick a bridge, see the plan, then rerun' : 'Needs the operator role'} onClick={() => setOpen(true)}>
        Rerun from a step…
      </button>
      <ConfirmDialog
        open={open}
        title={`Rerun intent ${shortId(id)} from a step`}
        confirmLabel={`Rerun from ${fromBridge}`}
        tone="primary"
        pending={rerun.isPending}
        confirmDisabled={!planned || noReason}
        onCancel={() => {
          setOpen(false);
          setRefused(null);
        }}
        onConfirm={() => {
          setRefused(null);
          rerun.mutate(undefined);
        }}
      >
        <BridgePicker bridges={bridges} value={fromBridge} onChange={setFromBridge} testId="rerun-bridge" />
        {plan.isPending && <Skeleton label="Making the plan" lines={3} />}
        {plan.error && <ErrorState title="This rerun cannot be planned" error={plan.error} />}
        {planned && <RerunPlanView plan={planned} />}
        {refused && (
          <div role="alert" className={`${styles.banner} ${styles.bannerError}`} data-testid="rerun-refused">
            Not rerun: {refused.message}
          </div>
        )}
        <p className={styles.hint}>
          To correct the payload first, cancel, apply the correction on this page, and open this again: the plan is made on the payload as it is then. If the intent changes after the plan was made,
          nothing is rerun and you see why.
        </p>
        <label className={own.field}>
          <span>Reason, kept in the audit (required)</span>
          <textarea value={reason} onChange={(e) => setReason(e.target.value)} maxLength={400} rows={2} data-testid="rerun-reason" />
        </label>
      </ConfirmDialog>
    </>
  );
}
