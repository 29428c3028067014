'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useMemo, useState, type ReactNode } from 'react';
import { changeIntentStatusAction } from '@/app/actions/intents';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { ErrorState } from '@/components/ui/ErrorState';
import { LiveIndicator } from '@/components/ui/LiveIndicator';
import { PageHeader, Panel } from '@/components/ui/PageHeader';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { Skeleton } from '@/components/ui/Skeleton';
import { StatusBadge } from '@/components/ui/StatusBadge';
import type { ActionError } from '@/lib/console/action-result';
import type { ListNavigation } from '@/lib/console/list-nav';
import { newIdempotencyKey } from '@/lib/console/ids';
import { REASON_MAX, reasonProblem, reasonRequired } from '@/lib/console/reasons';
import { fetchIntent } from '@/lib/console/intents-client';
import { correctionLines, mergeDiff, type DiffLine, type JsonRecord } from '@/lib/console/json-diff';
import { errorTitle } from '@/lib/console/messages';
import { intentKeys } from '@/lib/intents/keys';
import { allowedNextStatuses, type IntentStatus } from '@/lib/shared/intent-states';
import type { Correction, IntentWithCorrections } from '@/lib/shared/intent-types';
import { CorrectionForm } from './CorrectionForm';
import { DiffView } from './DiffView';
import { JsonView } from './JsonView';
import { LockWaitNotice } from './LockWaitNotice';
import { RowLockNotice } from '@/components/locks/RowLockNotice';
import styles from './intents.module.css';
import { LockHolderLink } from '@/components/locks/LockHolderLink';

export type DetailPermissions = { status: boolean; correct: boolean };

/**
 * The intent itself: facts and status actions, payload, correction form and correction history; `aside` holds the
 * server-streamed history panels (audit timeline, conflict events) beside them. `lockTimeoutMs` is the configured
 * row-lock wait, shown while a change waits for a lock (omitted: a generic wording).
 */
export function IntentDetail({ id, permissions, aside, lockTimeoutMs, nav }: { id: string; permissions: DetailPermissions; aside: ReactNode; lockTimeoutMs?: number; nav?: ListNavigation }) {
  const detail = useQuery({ queryKey: intentKeys.detail(id), queryFn: () => fetchIntent(id) });
  const header = (
    <PageHeader
      breadcrumb={
        // Back to the list as it was left (its status, search and order), and its rows around this one.
        <nav aria-label="Intents list" className={styles.listNav}>
          <Link href={nav?.back ?? '/intents'}>Intents</Link>
          {nav?.previous && (
            <Link href={nav.previous} rel="prev">
              ← Previous
            </Link>
          )}
          {nav?.next && (
            <Link href={nav.next} rel="next">
              Next →
            </Link>
          )}
        </nav>
      }
      title={
        <>
          <span className="mono">Intent {id.slice(0, 8)}</span>
          {detail.data && <StatusBadge status={detail.data.status} />}
        </>
      }
      description={<span className="mono">{id}</span>}
      actions={<LiveIndicator />}
    />
  );
  if (detail.isPending) {
    return (
      <>
        {header}
        <Skeleton label="Loading the intent" lines={6} />
      </>
    );
  }
  if (detail.isError) {
    return (
      <>
        {header}
        <ErrorState title="The intent could not be loaded" error={detail.error} onRetry={() => void detail.refetch()} retrying={detail.isFetching} />
      </>
    );
  }
  const intent = detail.data;
  return (
    <>
      {header}
      <div className={styles.detailGrid}>
        <div className={styles.column}>
          <Panel title="Status" id="status">
            <dl className={styles.facts}>
              <div>
                <dt>Status</dt>
                <dd data-testid="intent-status">{intent.status}</dd>
              </div>
              <div>
                <dt>Version</dt>
                <dd data-testid="intent-version">{intent.version}</dd>
              </div>
              <div>
                <dt>Source</dt>
                <dd>{intent.source}</dd>
              </div>
              <div>
                <dt>Created</dt>
                <dd>
                  <RelativeTime iso={intent.createdAt} />
                </dd>
              </div>
              <div>
                <dt>Updated</dt>
                <dd>
                  <RelativeTime iso={intent.updatedAt} />
                </dd>
              </div>
              <div>
                <dt>Corrections</dt>
                <dd>{intent.corrections.length}</dd>
              </div>
            </dl>
            <RowLockNotice intentId={intent.id} />
            <StatusActions intent={intent} allowed={permissions.status} lockTimeoutMs={lockTimeoutMs} />
          </Panel>
          <Panel title="Payload" id="payload">
            <JsonView value={intent.payload} label="Payload" />
          </Panel>
          {permissions.correct && <CorrectionPanel intent={intent} lockTimeoutMs={lockTimeoutMs} />}
          <Panel title={`Correction history (${intent.corrections.length})`} id="corrections">
            <CorrectionHistory corrections={intent.corrections} />
          </Panel>
        </div>
        <div className={styles.column}>{aside}</div>
      </div>
    </>
  );
}

function CorrectionPanel({ intent, lockTimeoutMs }: { intent: IntentWithCorrections; lockTimeoutMs?: number }) {
  if (intent.status === 'COMPLETED' || intent.status === 'FAILED') {
    return (
      <Panel title="Apply a correction" id="correct">
        <p className="muted">A {intent.status} intent takes no corrections{intent.status === 'FAILED' ? ': retry it (back to RECEIVED) first' : ''}.</p>
      </Panel>
    );
  }
  return (
    <Panel title="Apply a correction" id="correct">
      <CorrectionForm intent={intent} lockTimeoutMs={lockTimeoutMs} />
    </Panel>
  );
}

const STATUS_ACTION: Partial<Record<IntentStatus, { label: string; confirm?: string; tone?: 'danger' | 'primary' }>> = {
  FAILED: { label: 'Mark as FAILED', confirm: 'It leaves processing until an operator retries it (FAILED → RECEIVED).', tone: 'danger' },
  COMPLETED: { label: 'Move to COMPLETED', confirm: 'COMPLETED is final: the intent cannot change status or take corrections afterwards.', tone: 'danger' },
};

function StatusActions({ intent, allowed, lockTimeoutMs }: { intent: IntentWithCorrections; allowed: boolean; lockTimeoutMs?: number }) {
  const queryClient = useQueryClient();
  const [formKey] = useState(() => newIdempotencyKey('status'));
  const [confirming, setConfirming] = useState<IntentStatus | null>(null);
  const [error, setError] = useState<ActionError | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [reason, setReason] = useState('');
  const mutation = useMutation({
    mutationFn: (to: IntentStatus) =>
      // One key per (form, intent version, target): a double click or a retry of the same step applies once.
      changeIntentStatusAction({ id: intent.id, status: to, expectedVersion: intent.version, idempotencyKey: `${formKey}:${intent.version}:${to}`, reason }),
    onSuccess: (result, to) => {
      setConfirming(null);
      if (result.ok) {
        setError(null);
        setReason('');
        setDone(result.data.alreadyApplied ? `Already ${to}: nothing changed.` : `Moved to ${to} (version ${result.data.intent.version}).`);
        queryClient.setQueryData(intentKeys.detail(intent.id), (old: IntentWithCorrections | undefined) => (old ? { ...old, ...result.data.intent } : old));
      } else {
        setDone(null);
        setError(result.error);
      }
    },
    onError: (err) => {
      setConfirming(null);
      setError({ code: 'network', message: err instanceof Error ? err.message : String(err) });
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: intentKeys.all }),
  });
  const next = allowedNextStatuses(intent.status);
  if (!allowed) return <p className="muted">Your roles let you read this intent; changing its status needs the operator role.</p>;
  const go = (to: IntentStatus) => (STATUS_ACTION[to]?.confirm || reasonProblem(to, reason) ? setConfirming(to) : mutation.mutate(to));
  const pendingConfirm = confirming && STATUS_ACTION[confirming];
  const confirmProblem = confirming ? reasonProblem(confirming, reason) : null;
  return (
    <div>
      {next.length > 0 && (
        <label className={styles.reasonField}>
          <span>Reason (kept in the audit; required for FAILED)</span>
          <input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={REASON_MAX} placeholder="Why this change?" data-testid="status-reason" />
        </label>
      )}
      <div className={styles.actions} role="group" aria-label="Status actions">
        {next.length === 0 ? (
          <span className="muted">{intent.status} is final: no further steps.</span>
        ) : (
          <>
            <span className={styles.actionsLabel}>Next steps:</span>
            {next.map((to) => {
              const meta = STATUS_ACTION[to];
              const label = meta?.label ?? (intent.status === 'FAILED' && to === 'RECEIVED' ? 'Retry (back to RECEIVED)' : `Move to ${to}`);
              return (
                <button key={to} type="button" className={`btn ${meta?.tone === 'danger' ? '' : 'btn-primary'}`} disabled={mutation.isPending} onClick={() => go(to)}>
                  {label}
                </button>
              );
            })}
          </>
        )}
      </div>
      {/* While the confirm dialog is open (it stays open until the change answers) the notice is in it. */}
      {!confirming && <LockWaitNotice pending={mutation.isPending} lockTimeoutMs={lockTimeoutMs} />}
      {done && (
        <p className={styles.notice} role="status" style={{ marginTop: '0.6rem' }}>
          {done}
        </p>
      )}
      {error && (
        <div className={styles.alert} role="alert" style={{ marginTop: '0.6rem' }}>
          <strong>{errorTitle(error)}.</strong> {error.message}
          <LockHolderLink error={error} />
          {error.code === 'unauthenticated' && (
            <>
              {' '}
              <Link href={`/sign-in?next=/intents/${intent.id}`}>Sign in</Link>
            </>
          )}
        </div>
      )}
      <ConfirmDialog
        open={Boolean(confirming)}
        title={`Move intent ${intent.id.slice(0, 8)} to ${confirming}?`}
        confirmLabel={confirming ? `Move to ${confirming}` : 'Confirm'}
        tone={pendingConfirm?.tone ?? 'primary'}
        pending={mutation.isPending}
        confirmDisabled={Boolean(confirmProblem)}
        onCancel={() => setConfirming(null)}
        onConfirm={() => confirming && !confirmProblem && mutation.mutate(confirming)}
      >
        <p>
          {intent.status} → {confirming} at version {intent.version}. {pendingConfirm?.confirm}
        </p>
        <label className={styles.reasonField}>
          <span>Reason{confirming && reasonRequired(confirming) ? ' (required)' : ' (optional)'}</span>
          <textarea value={reason} onChange={(e) => setReason(e.target.value)} maxLength={REASON_MAX} rows={2} data-testid="confirm-reason" aria-invalid={Boolean(confirmProblem) || undefined} />
          {confirmProblem && reason.length === 0 && confirming && reasonRequired(confirming) && <span className="muted">Say why, for whoever retries it later.</span>}
        </label>
        <p className="muted">If someone changes it first, nothing is applied and you will see the new version.</p>
        <LockWaitNotice pending={mutation.isPending} lockTimeoutMs={lockTimeoutMs} />
      </ConfirmDialog>
    </div>
  );
}

/** Newest first; each correction's diff against what the history knows of the fields before it. */
export function CorrectionHistory({ corrections }: { corrections: Correction[] }) {
  const entries = useMemo(
    () =>
      corrections
        .reduce<{ known: JsonRecord; out: { correction: Correction; lines: DiffLine[] }[] }>(
          ({ known, out }, c) => ({
            known: mergeDiff(known, c.diff as JsonRecord),
            out: [...out, { correction: c, lines: correctionLines(known, c.diff as JsonRecord, c.metadata) }],
          }),
          { known: {}, out: [] },
        )
        .out.reverse(),
    [corrections],
  );
  if (entries.length === 0) return <p className="muted">No corrections yet.</p>;
  return (
    <ol className={styles.history} aria-label="Corrections, newest first">
      {entries.map(({ correction: c, lines }) => (
        <li key={c.id} id={`correction-${c.correctionId}`} className={styles.historyItem} data-testid="correction">
          <div className={styles.historyHead}>
            <strong>{c.actor}</strong>
            <span className="muted">
              <RelativeTime iso={c.createdAt} />
            </span>
            <span className="muted">
              v{c.versionBefore} → v{c.versionAfter}
            </span>
            {c.statusBefore !== c.statusAfter && (
              <span className="muted">
                {c.statusBefore} → {c.statusAfter}
              </span>
            )}
            <span className="muted">via {c.source}</span>
          </div>
          <p className={styles.reason}>
            <span className="muted">Why: </span>
            {c.reason}
          </p>
          <DiffView lines={lines} label={`Correction by ${c.actor}`} />
        </li>
      ))}
    </ol>
  );
}
