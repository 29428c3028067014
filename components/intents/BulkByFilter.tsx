'use client';

import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { cancelBatchAction, getBatchAction, previewBatchAction, startBatchAction } from '@/app/actions/bulk';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import type { ActionError } from '@/lib/console/action-result';
import { bulkKeys } from '@/lib/console/bulk-client';
import { REASON_MAX, reasonProblem, reasonRequired } from '@/lib/console/reasons';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import type { BatchView } from '@/lib/bulk/batches';
import { SERIES } from '@/lib/contention/series';
import { FILTER_PARAMS, intentKeys, type IntentListFilters } from '@/lib/intents/keys';
import { INTENT_STATUSES, type IntentStatus } from '@/lib/shared/intent-states';
import { ActionErrorAlert } from './ActionErrorAlert';
import styles from './intents.module.css';

/**
 * "Change everything matching this filter": the operator picks a status, sees how many intents will move and how
 * many stay as they are (from the server's count under the same filter), gives a reason, and starts a batch the
 * server runs in chunks. Progress is followed here; the batch can be cancelled and keeps running if the page
 * closes. Only intents whose status allows the move are moved, so the button is never bound to be refused.
 */
export function BulkByFilter({ filters, offer }: { filters: IntentListFilters; offer: boolean }) {
  const [open, setOpen] = useState(false);
  const [to, setTo] = useState<IntentStatus | ''>('');
  const [reason, setReason] = useState('');
  const [error, setError] = useState<ActionError | null>(null);
  const [batchId, setBatchId] = useState<string | null>(null);
  // Exactly the list's filter: what the operator sees is what the batch selects.
  const filter = Object.fromEntries((['status', ...FILTER_PARAMS] as const).flatMap((k) => (filters[k] ? [[k, filters[k]]] : []))) as BatchFilter;
  const preview = useBatchPreview(filter, to, open);
  const batch = useBatchProgress(batchId);
  const starting = useActionMutation({
    action: (vars: { filter: BatchFilter; to: IntentStatus; reason?: string }) => startBatchAction(vars),
    onOk: (started) => {
      setError(null);
      setOpen(false);
      setReason('');
      setBatchId(started.id);
    },
    onFailure: setError,
    invalidate: () => [],
  });

  const problem = to ? reasonProblem(to, reason) : 'choose a status';
  const p = preview.data;
  const start = () => {
    if (!to || problem || !p || p.movable === 0) return;
    starting.mutate({ filter, to, ...(reason.trim() ? { reason } : {}) });
  };
  const described = describeFilter(filters);

  if (!offer && !batch.data && !error) return null;
  return (
    <div className={styles.listToolbar}>
      {offer && (
        <button type="button" className="btn btn-sm" onClick={() => setOpen(true)} data-testid="bulk-by-filter">
          Change all {described}…
        </button>
      )}
      {batch.data && <BatchProgress batch={batch.data} onClose={() => setBatchId(null)} />}
      {error && <ActionErrorAlert error={error} />}
      <ConfirmDialog
        open={open}
        title={`Change the status of every intent ${described}`}
        confirmLabel={p && to ? `Move ${p.movable} to ${to}` : 'Move'}
        tone={to === 'FAILED' || to === 'COMPLETED' ? 'danger' : 'primary'}
        pending={starting.isPending}
        confirmDisabled={Boolean(problem) || !p || p.movable === 0 || preview.isFetching}
        onCancel={() => setOpen(false)}
        onConfirm={start}
      >
        <BatchForm to={to} onTo={setTo} reason={reason} onReason={setReason} preview={preview} />
      </ConfirmDialog>
    </div>
  );
}

type BatchFilter = Partial<Record<(typeof FILTER_PARAMS)[number], string>> & { status?: IntentStatus };

/** "matching FAILED and “osaka”", or "in the list" when nothing narrows it. */
function describeFilter(filters: IntentListFilters): string {
  const parts = [
    filters.status,
    filters.q && `“${filters.q}”`,
    filters.source && `source ${filters.source}`,
    (filters.from || filters.to) && 'the time range',
    filters.contention && SERIES[filters.contention].label.toLowerCase(),
  ].filter(Boolean);
  return parts.length ? `matching ${parts.join(' and ')}` : 'in the list';
}

/** How many would move, stay, or cannot move: the server's count under the same filter, asked once a status is chosen. */
function useBatchPreview(filter: BatchFilter, to: IntentStatus | '', open: boolean) {
  return useQuery({
    queryKey: bulkKeys.preview(filter, to),
    queryFn: async () => {
      const result = await previewBatchAction({ filter, to });
      if (!result.ok) throw Object.assign(new Error(result.error.message), { body: result.error });
      return result.data;
    },
    enabled: open && to !== '',
  });
}

/** The running batch, polled until it ends; then the intents it moved are re-read. */
function useBatchProgress(batchId: string | null) {
  const queryClient = useQueryClient();
  return useQuery({
    queryKey: bulkKeys.batch(batchId),
    queryFn: async () => {
      const result = await getBatchAction(batchId);
      if (!result.ok) throw new Error(result.error.message);
      if (result.data.status !== 'running') void queryClient.invalidateQueries({ queryKey: intentKeys.all });
      return result.data;
    },
    enabled: batchId !== null,
    refetchInterval: (q) => (q.state.data && q.state.data.status !== 'running' ? false : 700),
  });
}

function BatchForm({ to, onTo, reason, onReason, preview }: { to: IntentStatus | ''; onTo: (to: IntentStatus | '') => void; reason: string; onReason: (reason: string) => void; preview: ReturnType<typeof useBatchPreview> }) {
  const selectId = useId();
  const p = preview.data;
  return (
    <>
      <p className={styles.inlineLabel}>
        <label htmlFor={selectId}>Move to</label>{' '}
        <select id={selectId} className="field" value={to} onChange={(e) => onTo(e.target.value as IntentStatus | '')}>
          <option value="">Choose a status…</option>
          {INTENT_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </p>
      {to && preview.isFetching && !p && <p className="muted">Counting…</p>}
      {preview.isError && <p className={styles.fieldError}>{preview.error.message}</p>}
      {p && to && (
        <ul className={styles.batchCounts} data-testid="batch-preview" aria-label="What will happen">
          <li data-testid="batch-movable">
            <strong>{p.movable}</strong> will move to {to}
          </li>
          <li data-testid="batch-already">
            <strong>{p.already}</strong> already {to}: left as they are
          </li>
          <li data-testid="batch-blocked">
            <strong>{p.blocked}</strong> cannot move to {to} from their status: left as they are
          </li>
        </ul>
      )}
      {p && p.movable === 0 && <p className="muted">Nothing here can move to {to}.</p>}
      <label className={styles.reasonField}>
        <span>Reason, kept in the audit{to && reasonRequired(to) ? ' (required)' : ' (optional)'}</span>
        <textarea value={reason} onChange={(e) => onReason(e.target.value)} maxLength={REASON_MAX} rows={2} data-testid="batch-reason" />
      </label>
      <p className="muted">The server moves them in chunks of 100, each locked in id order; you can follow and cancel it here, and it carries on if you close the page.</p>
    </>
  );
}

function BatchProgress({ batch, onClose }: { batch: BatchView; onClose: () => void }) {
  const [cancelling, setCancelling] = useState(false);
  const done = batch.moved + batch.skipped;
  const pct = batch.planned ? Math.min(100, Math.round((done / batch.planned) * 100)) : 100;
  const running = batch.status === 'running';
  return (
    <div className={running ? styles.notice : batch.status === 'finished' ? styles.notice : styles.alert} role="status" data-testid="batch-progress" data-status={batch.status}>
      <strong>
        {running ? (batch.cancelRequested ? 'Cancelling after this chunk…' : `Moving to ${batch.to}…`) : batch.status === 'finished' ? 'Batch finished.' : batch.status === 'cancelled' ? 'Batch cancelled.' : 'Batch stopped.'}
      </strong>{' '}
      <span data-testid="batch-moved">{batch.moved}</span> of {batch.planned} moved to {batch.to}
      {batch.skipped > 0 && `, ${batch.skipped} changed meanwhile and were left as they were`}.
      {batch.error && ` ${batch.error}`}
      <progress max={100} value={pct} aria-label="Batch progress" className={styles.batchBar} />
      {running ? (
        <button
          type="button"
          className="btn btn-sm"
          disabled={cancelling || batch.cancelRequested}
          onClick={async () => {
            setCancelling(true);
            await cancelBatchAction(batch.id);
          }}
        >
          Cancel batch
        </button>
      ) : (
        <button type="button" className="btn btn-sm btn-ghost" onClick={onClose}>
          Dismiss
        </button>
      )}
    </div>
  );
}
