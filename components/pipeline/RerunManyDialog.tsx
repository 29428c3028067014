'use client';

import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { planRerunManyAction, rerunManyAction } from '@/app/actions/pipeline';
import styles from '@/components/locks/console.module.css';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { ErrorState } from '@/components/ui/ErrorState';
import { Skeleton } from '@/components/ui/Skeleton';
import { shortId } from '@/lib/console/ids';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import { workerKeys } from '@/lib/console/workers-client';
import type { RerunManyPlan, RerunManyResult } from '@/lib/pipeline/rerun-many';
import own from './rerun.module.css';
import { BridgePicker } from './BridgePicker';

/** Which failed intents to rerun: the ones ticked, or every failed one whose last error contains a text. */
export type RerunTargets = { ids: string[] } | { errorContains: string };

async function loadPlan(targets: RerunTargets, fromBridge: string): Promise<RerunManyPlan> {
  const result = await planRerunManyAction({ ...targets, fromBridge });
  if (!result.ok) throw new Error(result.error.message);
  return result.data;
}

/** How a rerun ended, in the words of the runs panel: by where its run stopped, not only whether it completed. */
const ENDED: Record<string, string> = { succeeded: 'ran through', waiting: 'waiting for an answer', failed: 'failed again', finished_with_errors: 'finished with errors', interrupted: 'interrupted' };

function outcome(results: RerunManyResult['results']): string {
  const ok = results.flatMap((r) => (r.ok ? [r] : []));
  const byEnd = new Map<string, number>();
  for (const r of ok) {
    const end = r.intentStatus === 'COMPLETED' ? 'completed' : (ENDED[r.runStatus] ?? r.runStatus.replace(/_/g, ' '));
    byEnd.set(end, (byEnd.get(end) ?? 0) + 1);
  }
  const ends = [...byEnd].map(([end, n]) => `${n} ${end}`).join(', ');
  const refused = results.flatMap((r) => (r.ok ? [] : [`${shortId(r.intentId)}: ${r.code}`]));
  return `Reran ${ok.length} intent${ok.length === 1 ? '' : 's'}${ends ? `: ${ends}` : ''}${refused.length ? `; ${refused.length} refused (${refused.join(', ')})` : ''}.`;
}

/** The summed plan of a rerun of several failed intents from one bridge, confirmed with a reason. */
export function RerunManyDialog({ targets, bridges, onClose, onDone }: { targets: RerunTargets; bridges: string[]; onClose: () => void; onDone: (text: string, ok: boolean) => void }) {
  const [fromBridge, setFromBridge] = useState(bridges[0] ?? '');
  const [reason, setReason] = useState('');
  const plan = useQuery({ queryKey: [...workerKeys.all, 'rerun-plan', targets, fromBridge], queryFn: () => loadPlan(targets, fromBridge), retry: false, refetchOnWindowFocus: false });
  const ids = plan.data?.plans.map((p) => p.intentId) ?? [];
  const rerun = useActionMutation({
    action: () => rerunManyAction({ ids, fromBridge, reason }),
    onOk: (data) => onDone(outcome(data.results), true),
    onFailure: (error) => onDone(error.message, false),
    onSettled: onClose,
    invalidate: () => [workerKeys.all],
  });
  return (
    <ConfirmDialog
      open
      title="Rerun failed intents from a step"
      confirmLabel={`Rerun ${ids.length} from ${fromBridge}`}
      tone="primary"
      pending={rerun.isPending}
      confirmDisabled={ids.length === 0 || reason.trim() === ''}
      onCancel={onClose}
      onConfirm={() => rerun.mutate(undefined)}
    >
      <BridgePicker bridges={bridges} value={fromBridge} onChange={setFromBridge} testId="rerun-many-bridge" />
      {plan.isPending && <Skeleton label="Making the plan" lines={3} />}
      {plan.error && <ErrorState title="This rerun cannot be planned" error={plan.error} />}
      {plan.data && <ManyPlanSummary plan={plan.data} />}
      <label className={own.field}>
        <span>Reason, kept in the audit of each intent (required)</span>
        <textarea value={reason} onChange={(e) => setReason(e.target.value)} maxLength={400} rows={2} data-testid="rerun-many-reason" />
      </label>
    </ConfirmDialog>
  );
}

function ManyPlanSummary({ plan }: { plan: RerunManyPlan }) {
  return (
    <div data-testid="rerun-many-plan">
      <p>
        {plan.plans.length} of {plan.ids.length} intent{plan.ids.length === 1 ? '' : 's'} will be rerun from {plan.fromBridge}, each as a new round on its payload as it is now: first FAILED → RECEIVED and
        forward to where {plan.fromBridge} started (each move audited with the reason and sent out), then:
      </p>
      {plan.summary.length > 0 && (
        <table className={styles.table}>
          <thead>
            <tr>
              <th>bridge</th>
              <th>reused (recorded result kept)</th>
              <th>runs again</th>
            </tr>
          </thead>
          <tbody>
            {plan.summary.map((s) => (
              <tr key={s.bridge}>
                <td className={styles.mono}>{s.bridge}</td>
                <td>{s.reused}</td>
                <td>{s.run}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {plan.refused.length > 0 && (
        <>
          <p>Left out ({plan.refused.length}):</p>
          <ul>
            {plan.refused.map((r) => (
              <li key={r.intentId}>
                <span className={styles.mono}>{shortId(r.intentId)}</span>: {r.message}
              </li>
            ))}
          </ul>
        </>
      )}
      <p className={styles.hint}>Each intent’s own plan (what each bridge may change) is on its page under “Rerun from a step…”. To correct a payload first, do it there.</p>
    </div>
  );
}
