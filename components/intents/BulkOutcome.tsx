import Link from 'next/link';
import type { ActionError } from '@/lib/console/action-result';
import { shortId } from '@/lib/console/ids';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { Intent } from '@/lib/shared/intent-types';
import styles from './intents.module.css';
import { LockHolderLink } from '@/components/locks/LockHolderLink';

export type BulkResult = { kind: 'ok'; text: string } | { kind: 'error'; error: ActionError } | null;
type Refusal = { intentId: string; from: IntentStatus; allowed: IntentStatus[]; message: string };

/**
 * What a bulk change came to: done, or refused as a whole — then which intents could not move and where they could
 * go, with a way to deselect those still selected.
 */
export function BulkOutcome({ outcome, intents, target, onDeselect, onDismiss }: { outcome: BulkResult; intents: Intent[]; target: IntentStatus | null; onDeselect: (ids: string[]) => void; onDismiss: () => void }) {
  if (outcome?.kind === 'ok') {
    return (
      <p className={styles.notice} role="status">
        {outcome.text}
      </p>
    );
  }
  if (outcome?.kind !== 'error') return null;
  const refusals = (outcome.error.details as { intents?: Refusal[] } | undefined)?.intents ?? [];
  const stillSelected = refusals.filter((r) => intents.some((i) => i.id === r.intentId));
  return (
    <div className={styles.alert} role="alert" data-testid="bulk-errors">
      <strong>Nothing was changed.</strong> {refusals.length ? `${refusals.length} of the selected intents cannot move to ${(outcome.error.details as { to?: string }).to ?? target}:` : outcome.error.message}
      {refusals.length > 0 && (
        <ul>
          {refusals.map((r) => (
            <li key={r.intentId}>
              <Link href={`/intents/${r.intentId}`} className="mono">
                {shortId(r.intentId)}
              </Link>{' '}
              is {r.from}: {r.allowed.length ? `it can move to ${r.allowed.join(' or ')}` : 'it is final'}.
            </li>
          ))}
        </ul>
      )}
      <LockHolderLink error={outcome.error} />
      <span className={styles.alertActions}>
        {stillSelected.length > 0 && (
          <button type="button" className="btn btn-sm" onClick={() => onDeselect(stillSelected.map((r) => r.intentId))}>
            Deselect {stillSelected.length === 1 ? 'it' : `these ${stillSelected.length}`}
          </button>
        )}
        <button type="button" className="btn btn-sm" onClick={onDismiss}>
          Dismiss
        </button>
      </span>
    </div>
  );
}
