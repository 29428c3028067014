'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useEffect } from 'react';
import { ErrorState } from '@/components/ui/ErrorState';
import { TableSkeleton } from '@/components/ui/Skeleton';
import { retryUnlessRefused } from '@/lib/console/api-client';
import { fetchIntentList } from '@/lib/console/intents-client';
import { listQuery } from '@/lib/console/list-query';
import { intentKeys, type IntentListFilters } from '@/lib/intents/keys';
import { useRowHolders } from '@/components/locks/RowLockNotice';
import { BulkBar } from './BulkBar';
import { BulkByFilter } from './BulkByFilter';
import { searchHighlights } from './Highlighted';
import { IntentRow, NoMatchesRow } from './IntentRow';
import { IntentsPager } from './IntentsPager';
import { useIntentsWorkspace } from './IntentsWorkspace';
import { onResultsKey } from './results-keys';
import { useRowSelection } from './useRowSelection';
import styles from './intents.module.css';

/** The list: keyset pages of 50, newest change first; select rows to change their status together. */
export function IntentsTable({ filters, canBulk, lockTimeoutMs }: { filters: IntentListFilters; canBulk: boolean; lockTimeoutMs?: number }) {
  const { setSelectedCount } = useIntentsWorkspace();
  const list = useQuery({ queryKey: intentKeys.list(filters), queryFn: () => fetchIntentList(filters), placeholderData: keepPreviousData, retry: retryUnlessRefused });
  const items = list.data?.items;
  const selection = useRowSelection(items ?? []);
  const holders = useRowHolders(items?.map((i) => i.id) ?? []);
  const router = useRouter();
  const selectedCount = selection.selected.size;
  useEffect(() => setSelectedCount(selectedCount), [selectedCount, setSelectedCount]);
  useEffect(() => () => setSelectedCount(0), [setSelectedCount]);

  if (list.isPending) return <TableSkeleton label="Loading intents" />;
  if (list.isError) return <ErrorState title="Intents could not be loaded" error={list.error} onRetry={() => void list.refetch()} retrying={list.isFetching} />;

  const rows = list.data.items;
  const marks = searchHighlights(filters.q);
  const base = { status: filters.status, q: filters.q, source: filters.source, from: filters.from, to: filters.to, stuck: filters.stuck, order: filters.order };
  // An intent opened from here knows the list it came from (back link, previous and next keep these filters).
  const rowQuery = listQuery({ ...base, contention: filters.contention, contentionOperation: filters.contentionOperation, contentionFrom: filters.contentionFrom, contentionTo: filters.contentionTo });

  return (
    <div className={styles.listPanel}>
      {/* Nothing to change when nothing matches: the filter's bulk change is offered only on a list with rows. Its
          batch's progress and result stay when the batch has emptied the list (every FAILED moved on, say). */}
      {canBulk && <BulkByFilter filters={filters} offer={rows.length > 0} />}
      {canBulk && <BulkBar intents={selection.selectedNow} onDeselect={selection.deselect} onDone={selection.clear} lockTimeoutMs={lockTimeoutMs} />}
      <div
        id="intent-results"
        className={styles.tableWrap}
        tabIndex={-1}
        onKeyDown={(e) => onResultsKey(e, (id) => router.push(`/intents/${id}${rowQuery}`))}
        aria-label="Results: j and k (or the arrow keys) move between rows, Enter opens one"
        role="region"
      >
        <table className={styles.table} aria-label="Intents" aria-busy={list.isFetching}>
          <IntentsTableHead canBulk={canBulk} order={filters.order} allSelected={selection.allSelected} onToggleAll={selection.toggleAll} empty={rows.length === 0} />
          <tbody>
            {rows.length === 0 && <NoMatchesRow filters={filters} columns={canBulk ? 7 : 6} />}
            {rows.map((intent, index) => (
              <IntentRow
                key={intent.id}
                intent={intent}
                rowQuery={rowQuery}
                marks={marks}
                holder={holders.get(intent.id)}
                selection={canBulk ? { selected: selection.selected.has(intent.id), onClick: (range) => selection.toggle(intent, index, range) } : undefined}
              />
            ))}
          </tbody>
        </table>
      </div>
      <IntentsPager filters={filters} base={base} shown={rows.length} nextCursor={list.data.nextCursor} />
    </div>
  );
}

function IntentsTableHead({ canBulk, order, allSelected, onToggleAll, empty }: { canBulk: boolean; order: IntentListFilters['order']; allSelected: boolean; onToggleAll: () => void; empty: boolean }) {
  return (
    <>
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
              <input type="checkbox" aria-label="Select all intents on this page" checked={allSelected} onChange={onToggleAll} disabled={empty} />
            </th>
          )}
          <th scope="col">Intent</th>
          <th scope="col">Status</th>
          <th scope="col">Source</th>
          <th scope="col">Payload</th>
          <th scope="col" className={styles.num}>
            Version
          </th>
          <th scope="col" aria-sort={order === 'oldest' ? 'ascending' : 'descending'}>
            Updated
          </th>
        </tr>
      </thead>
    </>
  );
}
