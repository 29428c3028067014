'use client';

import Link from 'next/link';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { StatusBadge } from '@/components/ui/StatusBadge';
import { RowLockBadge } from '@/components/locks/RowLockNotice';
import { intentsHref } from '@/lib/console/filters';
import { shortId } from '@/lib/console/ids';
import type { RowLockHolder } from '@/lib/locks/holders';
import type { IntentListFilters } from '@/lib/intents/keys';
import type { Intent } from '@/lib/shared/intent-types';
import { payloadSummary } from './format';
import { Highlighted, type SearchHighlights } from './Highlighted';
import styles from './intents.module.css';

type RowProps = {
  intent: Intent;
  /** `?…` of the list it is shown in: the intent page's back link and neighbours keep it. */
  rowQuery: string;
  marks: SearchHighlights;
  holder: RowLockHolder | undefined;
  /** Absent when the viewer cannot change statuses in bulk: no checkbox column. */
  selection?: { selected: boolean; onClick: (range: boolean) => void };
};

/** One intent in the list: id (the search's matches marked), status with any row lock on it, source, payload line, version, when. */
export function IntentRow({ intent, rowQuery, marks, holder, selection }: RowProps) {
  return (
    <tr data-intent-id={intent.id} tabIndex={-1} aria-label={`Intent ${shortId(intent.id)}, ${intent.status}`} className={selection?.selected ? styles.rowSelected : undefined}>
      {selection && (
        <td className={styles.checkCol}>
          <input type="checkbox" aria-label={`Select intent ${shortId(intent.id)}`} checked={selection.selected} onChange={() => undefined} onClick={(e) => selection.onClick(e.shiftKey)} />
        </td>
      )}
      <td className={styles.cellId}>
        <Link href={`/intents/${intent.id}${rowQuery}`} className={styles.idLink} title={intent.id}>
          <Highlighted text={shortId(intent.id)} marks={marks.id} />
        </Link>
      </td>
      <td className={styles.cellStatus}>
        <StatusBadge status={intent.status} />
        {holder && (
          <div>
            <RowLockBadge holder={holder} compact />
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
  );
}

/** The empty list: what was asked for, and how to widen a search. */
export function NoMatchesRow({ filters, columns }: { filters: IntentListFilters; columns: number }) {
  return (
    <tr>
      <td colSpan={columns} className={styles.empty} data-testid="no-matches">
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
  );
}
