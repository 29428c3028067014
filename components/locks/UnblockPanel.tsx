'use client';

import { useQuery, useQueryClient } from '@tanstack/react-query';
import { lockKeys } from '@/lib/console/locks-client';
import { useActionState, useEffect, useState } from 'react';
import { cancelBackendAction, terminateBackendAction, unblockImpactAction, type UnblockState } from '@/app/actions/locks';
import { blocksOthers } from '@/lib/locks/tree';
import styles from './console.module.css';
import { UnblockImpact } from './UnblockImpact';
import { Skeleton } from '@/components/ui/Skeleton';

const idle: UnblockState = { status: 'idle' };

/**
 * Guarded unblocking: the impact first — sessions waiting behind, transaction age, intents — then a
 * required reason, cancel, and terminate only once a cancel was tried and the backend still blocks. The server
 * enforces all of it again; this only makes the order obvious.
 */
export function UnblockPanel({ pid, canTerminate, onClose }: { pid: number; canTerminate: boolean; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [reason, setReason] = useState('');
  const [cancelState, cancelAction, cancelling] = useActionState(cancelBackendAction, idle);
  const [terminateState, terminateAction, terminating] = useActionState(terminateBackendAction, idle);
  const last = terminateState.status !== 'idle' ? terminateState : cancelState;
  // Once our own action reports the backend gone, its impact is history: stop asking for it (the lookup would
  // only answer "not found", and that is the expected end, not an error).
  const endedByAction = last.status === 'ok' && !!last.result && (!last.result.signalled || last.result.after?.alive === false);
  const impactQuery = useQuery({ queryKey: lockKeys.impact(pid), queryFn: () => unblockImpactAction(pid), refetchInterval: 5000, enabled: !endedByAction });

  useEffect(() => {
    if (cancelState.status !== 'idle' || terminateState.status !== 'idle') {
      void queryClient.invalidateQueries({ queryKey: lockKeys.all });
    }
  }, [cancelState, terminateState, queryClient]);

  const answer = impactQuery.data;
  // The backend may also have finished by itself (or been ended elsewhere) while the panel was open.
  const notFound = answer?.code === 'not_found' || (last.status === 'error' && last.code === 'not_found');
  const gone = endedByAction || notFound;
  const impact = gone ? undefined : answer?.impact;
  const cancelTried = answer?.cancelTried || cancelState.result?.signalled === true;
  // Blocking now, or in the last moments as the lock history saw it (waiters that timed out retry a second later).
  const stillBlocks = impact ? blocksOthers(impact) : false;
  // A backend idle in its transaction runs no query: a cancel cannot help it, so terminate is offered at once.
  const cancelUseless = impact ? !impact.cancelCanHelp : false;
  const terminateReady = canTerminate && (cancelTried || cancelUseless) && stillBlocks;
  const reasonError = last.fieldErrors?.reason;
  // One outcome at a time: a "not found" from a lookup or an action is said once, plainly, and not as an error.
  const showLast = last.status !== 'idle' && !(last.status === 'error' && last.code === 'not_found');

  return (
    <div className={styles.panel} data-testid={`unblock-panel-${pid}`} role="region" aria-label={`Unblock backend ${pid}`}>
      <div className={styles.actions} style={{ justifyContent: 'space-between' }}>
        <h3>Unblock backend {pid}</h3>
        <button type="button" className="btn btn-sm" onClick={onClose}>
          Close
        </button>
      </div>
      {impactQuery.isLoading && <Skeleton lines={3} label="Reading the impact" />}
      {answer?.error && !notFound && (
        <div className={`${styles.banner} ${styles.bannerError}`} role="alert">
          {answer.error}
        </div>
      )}
      {notFound && !endedByAction && (
        <div className={`${styles.banner} ${styles.bannerInfo}`} role="status" data-testid="unblock-gone">
          Backend {pid} is no longer running: it finished or was ended elsewhere, so there is nothing left to unblock.
        </div>
      )}
      {impact && <UnblockImpact impact={impact} />}
      <form>
        <input type="hidden" name="pid" value={pid} />
        <label className={styles.formField}>
          Reason (required, recorded in the audit log)
          <textarea className="field" name="reason" value={reason} onChange={(e) => setReason(e.target.value)} required minLength={5} maxLength={500} placeholder="e.g. INC-123: batch job holds intent rows; waiters timing out" />
          {reasonError && <span className={styles.fieldError}>{reasonError}</span>}
        </label>
        <div className={styles.actions}>
          {!cancelUseless && (
            <button type="submit" formAction={cancelAction} className="btn btn-danger" disabled={!impact || cancelling || terminating}>
              {cancelling ? 'Cancelling…' : 'Cancel its query'}
            </button>
          )}
          {canTerminate ? (
            <button type="submit" formAction={terminateAction} className="btn btn-danger" disabled={!terminateReady || cancelling || terminating}>
              {terminating ? 'Terminating…' : 'Terminate session'}
            </button>
          ) : null}
          <span className={styles.hint}>
            {nextStep({ gone, cancelUseless, stillBlocks, cancelTried })}
          </span>
        </div>
      </form>
      {showLast && (
        <div className={`${styles.banner} ${last.status !== 'ok' ? styles.bannerError : last.result?.after && last.result.after.alive && last.result.after.waitingBehind > 0 ? styles.bannerWarn : styles.bannerOk}`} role="status" data-testid="unblock-result" style={{ marginTop: 12 }}>
          {last.message}
        </div>
      )}
    </div>
  );
}

/** What the operator can do next, in words. */
function nextStep({ gone, cancelUseless, stillBlocks, cancelTried }: { gone: boolean; cancelUseless: boolean; stillBlocks: boolean; cancelTried: boolean }): string {
  if (gone) return 'It has ended.';
  if (cancelUseless && stillBlocks) return 'It is idle in its transaction: there is no query to cancel, and it keeps its locks until its session ends. Terminate (pg_terminate_backend) rolls its transaction back.';
  if (cancelUseless) return 'It is idle, holds no intent’s row, and nobody has waited for its transaction lately: there is nothing to stop it for.';
  if (!cancelTried) return 'Cancel first (pg_cancel_backend). Terminate becomes available only if it still blocks afterwards.';
  return stillBlocks ? 'A cancel was tried and it still blocks: terminate (pg_terminate_backend) ends the whole session.' : 'It no longer blocks anyone.';
}
