import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { shortId } from '@/lib/console/ids';
import type { Pending } from './useWorkerControls';

/** The confirmation of a worker control, saying what it does and that it is audited. */
export function WorkerControlDialog({ pending, busy, onConfirm, onCancel }: { pending: Pending; busy: boolean; onConfirm: () => void; onCancel: () => void }) {
  return (
    <ConfirmDialog
      open={pending !== null}
      title={pending?.kind === 'pause' ? 'Pause claiming?' : pending?.kind === 'resume' ? 'Resume claiming?' : pending?.kind === 'retry-now' ? 'Retry now?' : 'Cancel this retry?'}
      confirmLabel={pending?.kind === 'pause' ? 'Pause claiming' : pending?.kind === 'resume' ? 'Resume claiming' : pending?.kind === 'retry-now' ? 'Retry now' : 'Cancel the retry'}
      tone={pending?.kind === 'pause' || pending?.kind === 'cancel' ? 'danger' : 'primary'}
      pending={busy}
      onConfirm={onConfirm}
      onCancel={onCancel}
    >
      {pending?.kind === 'pause' && <p>No worker will claim new work until claiming is resumed. Runs in flight finish. This is recorded in the audit log.</p>}
      {pending?.kind === 'resume' && <p>Every worker starts claiming due intents again. This is recorded in the audit log.</p>}
      {pending?.kind === 'retry-now' && <p>Intent {shortId(pending.intentId)} becomes due now; the next free worker claims it. This is recorded in its audit trail.</p>}
      {pending?.kind === 'cancel' && <p>Intent {shortId(pending.intentId)} stays as it is and no worker claims it again (an operator can still run its pipeline or retry it). This is recorded in its audit trail.</p>}
    </ConfirmDialog>
  );
}
