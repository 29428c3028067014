'use client';

import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect, useId, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { bulkChangeStatusAction } from '@/app/actions/intents';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { ErrorState } from '@/components/ui/ErrorState';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { TableSkeleton } from '@/components/ui/Skeleton';
import { StatusBadge } from '@/components/ui/StatusBadge';
import type { ActionError } from '@/lib/console/action-result';
import { intentsHref } from '@/lib/console/filters';
import { listQuery } from '@/lib/console/list-query';
import { REASON_MAX, reasonProblem, reasonRequired } from '@/lib/console/reasons';
import { fetchIntentList, retryUnlessRefused } from '@/lib/console/intents-client';
import { intentKeys, type IntentListFilters } from '@/lib/intents/keys';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { Intent } from '@/lib/shared/intent-types';
import { useIntentsWorkspace } from './IntentsWorkspace';
import { LockWaitNotice } from './LockWaitNotice';
import { BulkByFilter } from './BulkByFilter';
import { RowLockBadge, useRowHolders } from '@/components/locks/RowLockNotice';
import { defaultTarget, describeChoice, planBulk, targetChoices } from './bulk-plan';
import { payloadSummary, shortId } from './format';
import { Highlighted, searchHighlights } from './Highlighted';
import styles from './intents.module.css';
import { LockHolderLink } from '@/components/locks/LockHolderLink';

type Refusal = { intentId: string; from: IntentStatus; allowed: IntentStatus[]; message: string };

/** The list: keyset pages of 50, newest change first; select rows to change their status together. */
export function IntentsTable({ filters, canBulk, lockTimeoutMs }: { filters: IntentListFilters; canBulk: boolean; lockTimeoutMs?: number }) {
  const { setSelectedCount } = useIntentsWorkspace();
  const list = useQuery({ queryKey: intentKeys.list(filters), queryFn: () => fetchIntentList(filters), placeholderData: keepPreviousData, retry: retryUnlessRefused });
  const [selected, setSelected] = useState<Map<string, Intent>>(new Map());
  const holders = useRowHolders(list.data?.items.map((i) => i.id) ?? []);
  const lastClicked = useRef<number | null>(null);
  const router = useRouter();
  useEffect(() => setSelectedCount(selected.size), [selected.size, setSelectedCount]);
  useEffect(() => () => setSelectedCount(0), [setSelectedCount]);

  if (list.isPending) return <TableSkeleton label="Loading intents" />;
  if (list.isError) return <ErrorState title="Intents could not be loaded" error={list.error} onRetry={() => void list.refetch()} retrying={list.isFetching} />;

  const items = list.data.items;
  const marks = searchHighlights(filters.q);
  const base = { status: filters.status, q: filters.q, source: filters.source, from: filters.from, to: filters.to, stuck: filters.stuck, order: filters.order };
  const allSelected = items.length > 0 && items.every((i) => selected.has(i.id));
  // Shift-click selects (or deselects) the whole range from the last row clicked, as in a mail client.
  const toggle = (intent: Intent, index: number, range: boolean) => {
    const from = range && lastClicked.current !== null ? Math.min(lastClicked.current, index) : index;
    const to = range && lastClicked.current !== null ? Math.max(lastClicked.current, index) : index;
    lastClicked.current = index;
    setSelected((prev) => {
      const next = new Map(prev);
      const select = !prev.has(intent.id);
      for (const row of items.slice(from, to + 1)) {
        if (select) next.set(row.id, row);
        else next.delete(row.id);
      }
      return next;
    });
  };
  const toggleAll = () => setSelected(allSelected ? new Map() : new Map(items.map((i) => [i.id, i])));
  const deselect = (ids: string[]) =>
    setSelected((prev) => {
      const next = new Map(prev);
      for (const id of ids) next.delete(id);
      return next;
    });
  // The selection keeps the rows as they were when picked; the list's latest copy (refetched after a bulk change,
  // or when live refresh resumes) knows their status better.
  const latest = new Map(items.map((i) => [i.id, i]));
  const selectedNow = [...selected.values()].map((i) => latest.get(i.id) ?? i);
  // An intent opened from here knows the list it came from (back link, previous and next keep these filters).
  const rowQuery = listQuery({ ...base, contention: filters.contention, contentionOperation: filters.contentionOperation, contentionFrom: filters.contentionFrom, contentionTo: filters.contentionTo });
  // The keyboard, as in a mail client: j / ↓ and k / ↑ move between rows, Enter opens the row's intent.
  const onResultsKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const target = e.target as HTMLElement;
    const rows = [...e.currentTarget.querySelectorAll<HTMLTableRowElement>('tbody tr[data-intent-id]')];
    const row = target.closest('tr');
    const at = row ? rows.indexOf(row as HTMLTableRowElement) : -1;
    const step = e.key === 'j' || e.key === 'ArrowDown' ? 1 : e.key === 'k' || e.key === 'ArrowUp' ? -1 : 0;
    if (step && rows.length) {
      e.preventDefault();
      rows[Math.min(rows.length - 1, Math.max(0, at + step))].focus();
    } else if (e.key === 'Enter' && target === row && row.dataset.intentId) {
      e.preventDefault();
      router.push(`/intents/${row.dataset.intentId}${rowQuery}`);
    }
  };

  return (
    <div className={styles.listPanel}>
      {/* Nothing to change when nothing matches: the filter's bulk change is offered only on a list with rows. */}
      {canBulk && items.length > 0 && (
        <div className={styles.listToolbar}>
          <BulkByFilter filters={filters} />
        </div>
      )}
      {canBulk && <BulkBar intents={selectedNow} onDeselect={deselect} onDone={() => setSelected(new Map())} lockTimeoutMs={lockTimeoutMs} />}
      <div
        id="intent-results"
        className={styles.tableWrap}
        tabIndex={-1}
        onKeyDown={onResultsKey}
        aria-label="Results: j and k (or the arrow keys) move between rows, Enter opens one"
        role="region"
      >
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
              <th scope="col" aria-sort={filters.order === 'oldest' ? 'ascending' : 'descending'}>
                Updated
              </th>
            </tr>
          </thead>
          <tbody>
            {items.length === 0 && (
              <tr>
                <td colSpan={canBulk ? 7 : 6} className={styles.empty} data-testid="no-matches">
                  No intents match {filters.q ? <>“{filters.q}”</> : 'this filter'}
                  {filters.source ? ` from ${filters.source}` : ''}
                  {filters.status ? ` in ${filters.status}` : ''}
                  {filters.from || filters.to ? ' in that time range' : ''}.
                  {filters.q && (
                    <p className="muted">
                      The search takes an id&apos;s first characters (any number of them), a source, or payload text as the table shows it (<code>city: Osaka</code>).{' '}
                      {filters.status || filters.source || filters.from || filters.to ? (
                        <Link href={intentsHref({ q: filters.q })}>Search “{filters.q}” in every status, source and time</Link>
                      ) : (
                        <Link href={intentsHref({})}>Clear the search</Link>
                      )}
                    </p>
                  )}
                </td>
              </tr>
            )}
            {items.map((intent, index) => (
              <tr key={intent.id} data-intent-id={intent.id} tabIndex={-1} aria-label={`Intent ${shortId(intent.id)}, ${intent.status}`} className={selected.has(intent.id) ? styles.rowSelected : undefined}>
                {canBulk && (
                  <td className={styles.checkCol}>
                    <input
                      type="checkbox"
                      aria-label={`Select intent ${shortId(intent.id)}`}
                      checked={selected.has(intent.id)}
                      onChange={() => undefined}
                      onClick={(e) => toggle(intent, index, e.shiftKey)}
                    />
                  </td>
                )}
                <td className={styles.cellId}>
                  <Link href={`/intents/${intent.id}${rowQuery}`} className={styles.idLink} title={intent.id}>
                    <Highlighted text={shortId(intent.id)} marks={marks.id} />
                  </Link>
                </td>
                <td className={styles.cellStatus}>
                  <StatusBadge status={intent.status} />
                  {holders.get(intent.id) && (
                    <div>
                      <RowLockBadge holder={holders.get(intent.id)!} compact />
                    </div>
                  )}
                </td>
                <td className={styles.source} title={intent.source}>
                  <Highlighted text={intent.source} marks={marks.source(intent.source)} />
                </td>
                <td className={styles.payloadCell} title={payloadSummary(intent.payload, Infinity)}>
                  <Highlighted text={payloadSummary(intent.payload, 400)} marks={marks.payload} snippet />
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
          {items.length} shown · {filters.order === 'oldest' ? 'oldest change first' : 'newest change first'}
          {filters.stuck ? ` · unchanged for more than ${filters.stuck}, not COMPLETED` : ''}
          {filters.cursor ? (filters.order === 'oldest' ? ' · a later page' : ' · older page') : ''}
        </span>
        <span className={styles.pagerLinks}>
          {filters.cursor && (
            <Link href={intentsHref(base)} className="btn btn-sm">
              {filters.order === 'oldest' ? '← Oldest' : '← Newest'}
            </Link>
          )}
          {list.data.nextCursor ? (
            <Link href={intentsHref({ ...base, cursor: list.data.nextCursor })} className="btn btn-sm" rel="next">
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

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * Bulk status change. The target list says, for each status, how many of the selected intents can move there (from
 * the state machine and the statuses on screen); the confirm dialog separates those that move from those that
 * cannot and offers to deselect the latter, because the change is all-or-nothing: the server, which checks again
 * under its locks, refuses all of it if any one cannot move.
 */
function BulkBar({ intents, onDeselect, onDone, lockTimeoutMs }: { intents: Intent[]; onDeselect: (ids: string[]) => void; onDone: () => void; lockTimeoutMs?: number }) {
  const queryClient = useQueryClient();
  const selectId = useId();
  const [chosen, setChosen] = useState<IntentStatus | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [reason, setReason] = useState('');
  const [deselectedNote, setDeselectedNote] = useState<string | null>(null);
  const noteRef = useRef<HTMLParagraphElement>(null);
  const [outcome, setOutcome] = useState<{ kind: 'ok'; text: string } | { kind: 'error'; error: ActionError } | null>(null);
  const choices = useMemo(() => targetChoices(intents), [intents]);
  const suggested = useMemo(() => defaultTarget(intents), [intents]);
  // A choice stands while it still moves something; otherwise fall back to the suggestion (or none).
  const target = chosen && (choices.find((c) => c.status === chosen)?.moving ?? 0) > 0 ? chosen : suggested;
  const plan = useMemo(() => (target ? planBulk(intents, target) : null), [intents, target]);
  if (intents.length === 0 && chosen) setChosen(null);

  useEffect(() => {
    // The deselect button is gone once used: the note that replaces it takes the focus, inside the dialog.
    if (deselectedNote) noteRef.current?.focus();
  }, [deselectedNote]);

  const mutation = useMutation({
    mutationFn: async (vars: { ids: string[]; status: IntentStatus; reason: string }) => bulkChangeStatusAction(vars),
    onSuccess: (result, vars) => {
      setConfirming(false);
      if (result.ok) {
        setReason('');
        const already = result.data.alreadyApplied.length;
        setOutcome({ kind: 'ok', text: `${plural(vars.ids.length, 'intent')} now ${vars.status}${already ? ` (${already} already were)` : ''}.` });
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
  const stillSelectedRefusals = refusals.filter((r) => intents.some((i) => i.id === r.intentId));
  const closeDialog = () => {
    setConfirming(false);
    setDeselectedNote(null);
  };
  const deselectBlocked = () => {
    if (!plan) return;
    const ids = plan.blocked.map((b) => b.intent.id);
    onDeselect(ids);
    setDeselectedNote(`Deselected ${ids.map(shortId).join(', ')}. ${plural(plan.moving.length + plan.already.length, 'intent')} left, all of which can move to ${plan.target}.`);
  };
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
          <LockHolderLink error={outcome.error} />
          <span className={styles.alertActions}>
            {stillSelectedRefusals.length > 0 && (
              <button type="button" className="btn btn-sm" onClick={() => onDeselect(stillSelectedRefusals.map((r) => r.intentId))}>
                Deselect {stillSelectedRefusals.length === 1 ? 'it' : `these ${stillSelectedRefusals.length}`}
              </button>
            )}
            <button type="button" className="btn btn-sm" onClick={() => setOutcome(null)}>
              Dismiss
            </button>
          </span>
        </div>
      )}
      {plan && (
        <ConfirmDialog
          open={confirming && n > 0}
          title={`Move ${plural(n, 'intent')} to ${plan.target}?`}
          confirmLabel={`Move ${n} to ${plan.target}`}
          tone={plan.target === 'FAILED' || plan.target === 'COMPLETED' || plan.blocked.length > 0 ? 'danger' : 'primary'}
          pending={mutation.isPending}
          confirmDisabled={Boolean(reasonProblem(plan.target, reason))}
          onCancel={closeDialog}
          onConfirm={() => mutation.mutate({ ids: intents.map((i) => i.id), status: plan.target, reason })}
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
              <button type="button" className="btn btn-sm" onClick={deselectBlocked} disabled={mutation.isPending}>
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
          <label className={styles.reasonField}>
            <span>Reason, kept in the audit{reasonRequired(plan.target) ? ' (required)' : ' (optional)'}</span>
            <textarea value={reason} onChange={(e) => setReason(e.target.value)} maxLength={REASON_MAX} rows={2} data-testid="bulk-reason" />
          </label>
          <LockWaitNotice pending={mutation.isPending} lockTimeoutMs={lockTimeoutMs} plural={n > 1} />
        </ConfirmDialog>
      )}
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
