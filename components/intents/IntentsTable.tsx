'use client';

import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useEffect, useMemo, useState } from 'react';
import { bulkChangeStatusAction } from '@/app/actions/intents';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { ErrorState } from '@/components/ui/ErrorState';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { TableSkeleton } from '@/components/ui/Skeleton';
import { StatusBadge } from '@/components/ui/StatusBadge';
import type { ActionError } from '@/lib/console/action-result';
import { intentsHref } from '@/lib/console/filters';
import { fetchIntentList } from '@/lib/console/intents-client';
import { intentKeys, type IntentListFilters } from '@/lib/intents/keys';
import { INTENT_STATUSES, type IntentStatus } from '@/lib/intents/state-machine';
import type { Intent } from '@/lib/intents/types';
import { useIntentsWorkspace } from './IntentsWorkspace';
import { payloadSummary, shortId } from './format';
import styles from './intents.module.css';

type Refusal = { intentId: string; from: IntentStatus; allowed: IntentStatus[]; message: string };

/** The list: keyset pages of 50, newest change first; select rows to change their status together. */
export function IntentsTable({ filters, canBulk }: { filters: IntentListFilters; canBulk: boolean }) {
  const { setSelectedCount } = useIntentsWorkspace();
  const list = useQuery({ queryKey: intentKeys.list(filters), queryFn: () => fetchIntentList(filters), placeholderData: keepPreviousData });
  const [selected, setSelected] = useState<Map<string, Intent>>(new Map());
  useEffect(() => setSelectedCount(selected.size), [selected.size, setSelectedCount]);
  useEffect(() => () => setSelectedCount(0), [setSelectedCount]);

  if (list.isPending) return <TableSkeleton label="Loading intents" />;
  if (list.isError) return <ErrorState title="Intents could not be loaded" error={list.error} onRetry={() => void list.refetch()} retrying={list.isFetching} />;

  const items = list.data.items;
  const allSelected = items.length > 0 && items.every((i) => selected.has(i.id));
  const toggle = (intent: Intent) =>
    setSelected((prev) => {
      const next = new Map(prev);
      if (next.has(intent.id)) next.delete(intent.id);
      else next.set(intent.id, intent);
      return next;
    });
  const toggleAll = () => setSelected(allSelected ? new Map() : new Map(items.map((i) => [i.id, i])));

  return (
    <div className={styles.listPanel}>
      {canBulk && <BulkBar selected={selected} onDone={() => setSelected(new Map())} />}
      <div className={styles.tableWrap}>
        <table className={styles.table} aria-label="Intents" aria-busy={list.isFetching}>
          {/* Fixed widths for the short columns; the payload takes what is left and ends in an ellipsis. */}
          <colgroup>
            {canBulk && <col className={styles.colCheck} />}
            <col className={styles.colId} />
            <col className={styles.colStatus} />
            <col className={styles.colSource} />
            <col />
            <col className={styles.colVersion} />
            <col className={styles.colWhen} />
          </colgroup>
          <thead>
            <tr>
              {canBulk && (
                <th scope="col" className={styles.checkCol}>
                  <input type="checkbox" aria-label="Select all intents on this page" checked={allSelected} onChange={toggleAll} disabled={items.length === 0} />
                </th>
              )}
              <th scope="col">Intent</th>
              <th scope="col">Status</th>
              <th scope="col">Source</th>
              <th scope="col">Payload</th>
              <th scope="col" className={styles.num}>
                Version
              </th>
              <th scope="col" aria-sort="descending">
                Updated
              </th>
            </tr>
          </thead>
          <tbody>
            {items.length === 0 && (
              <tr>
                <td colSpan={canBulk ? 7 : 6} className={styles.empty}>
                  No intents match {filters.q ? <>“{filters.q}”</> : 'this filter'}
                  {filters.status ? ` in ${filters.status}` : ''}.
                </td>
              </tr>
            )}
            {items.map((intent) => (
              <tr key={intent.id} data-intent-id={intent.id} className={selected.has(intent.id) ? styles.rowSelected : undefined}>
                {canBulk && (
                  <td className={styles.checkCol}>
                    <input type="checkbox" aria-label={`Select intent ${shortId(intent.id)}`} checked={selected.has(intent.id)} onChange={() => toggle(intent)} />
                  </td>
                )}
                <td>
                  <Link href={`/intents/${intent.id}`} className={styles.idLink} title={intent.id}>
                    {shortId(intent.id)}
                  </Link>
                </td>
                <td>
                  <StatusBadge status={intent.status} />
                </td>
                <td className={styles.source} title={intent.source}>
                  {intent.source}
                </td>
                <td className={styles.payloadCell} title={payloadSummary(intent.payload, Infinity)}>
                  {payloadSummary(intent.payload, 400)}
                </td>
                <td className={styles.num}>v{intent.version}</td>
                <td className={styles.when}>
                  <RelativeTime iso={intent.updatedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <nav aria-label="Pages" className={styles.pager}>
        <span className="muted">
          {items.length} shown · newest change first{filters.cursor ? ' · older page' : ''}
        </span>
        <span className={styles.pagerLinks}>
          {filters.cursor && (
            <Link href={intentsHref({ status: filters.status, q: filters.q })} className="btn btn-sm">
              ← Newest
            </Link>
          )}
          {list.data.nextCursor ? (
            <Link href={intentsHref({ status: filters.status, q: filters.q, cursor: list.data.nextCursor })} className="btn btn-sm" rel="next">
              Next page →
            </Link>
          ) : (
            <span className="muted">End of list</span>
          )}
        </span>
      </nav>
    </div>
  );
}

function BulkBar({ selected, onDone }: { selected: Map<string, Intent>; onDone: () => void }) {
  const queryClient = useQueryClient();
  const [target, setTarget] = useState<IntentStatus>('COMPLETED');
  const [confirming, setConfirming] = useState(false);
  const [outcome, setOutcome] = useState<{ kind: 'ok'; text: string } | { kind: 'error'; error: ActionError } | null>(null);
  const intents = useMemo(() => [...selected.values()], [selected]);
  const mutation = useMutation({
    mutationFn: async (vars: { ids: string[]; status: IntentStatus }) => bulkChangeStatusAction(vars),
    onSuccess: (result, vars) => {
      setConfirming(false);
      if (result.ok) {
        const already = result.data.alreadyApplied.length;
        setOutcome({ kind: 'ok', text: `${vars.ids.length} intent${vars.ids.length === 1 ? '' : 's'} now ${vars.status}${already ? ` (${already} already were)` : ''}.` });
        onDone();
      } else setOutcome({ kind: 'error', error: result.error });
    },
    onError: (err) => {
      setConfirming(false);
      setOutcome({ kind: 'error', error: { code: 'network', message: err instanceof Error ? err.message : String(err) } });
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: intentKeys.all }),
  });
  const refusals = outcome?.kind === 'error' ? ((outcome.error.details as { intents?: Refusal[] } | undefined)?.intents ?? []) : [];

  return (
    <>
      {selected.size > 0 && (
        <div className={styles.bulkBar} role="region" aria-label="Bulk actions">
          <strong>{selected.size} selected</strong>
          <button type="button" className="btn btn-sm btn-ghost" onClick={onDone}>
            Clear selection
          </button>
          <span className={styles.bulkSpacer} />
          <label className={styles.inlineLabel}>
            Move to
            <select className="field" value={target} onChange={(e) => setTarget(e.target.value as IntentStatus)}>
              {INTENT_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <button type="button" className="btn btn-primary btn-sm" onClick={() => setConfirming(true)}>
            Change status…
          </button>
        </div>
      )}
      {outcome?.kind === 'ok' && (
        <p className={styles.notice} role="status">
          {outcome.text}
        </p>
      )}
      {outcome?.kind === 'error' && (
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
          <button type="button" className="btn btn-sm" onClick={() => setOutcome(null)}>
            Dismiss
          </button>
        </div>
      )}
      <ConfirmDialog
        open={confirming}
        title={`Move ${intents.length} intent${intents.length === 1 ? '' : 's'} to ${target}?`}
        confirmLabel={`Move ${intents.length} to ${target}`}
        tone={target === 'FAILED' || target === 'COMPLETED' ? 'danger' : 'primary'}
        pending={mutation.isPending}
        onCancel={() => setConfirming(false)}
        onConfirm={() => mutation.mutate({ ids: intents.map((i) => i.id), status: target })}
      >
        <p>
          All {intents.length} change together or none does: they are locked in id order, so this cannot deadlock with another bulk change.
          {target === 'COMPLETED' && ' COMPLETED is final: they cannot be moved again.'}
          {target === 'FAILED' && ' Failed intents leave processing until an operator retries them.'}
        </p>
        <ul className={styles.confirmList}>
          {intents.slice(0, 8).map((i) => (
            <li key={i.id}>
              <span className="mono">{shortId(i.id)}</span> {i.status} → {target}
            </li>
          ))}
          {intents.length > 8 && <li>…and {intents.length - 8} more</li>}
        </ul>
      </ConfirmDialog>
    </>
  );
}
