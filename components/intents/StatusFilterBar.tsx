'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState, type RefObject } from 'react';
import { ErrorState } from '@/components/ui/ErrorState';
import { ContentionFilterChip } from './ContentionFilterChip';
import { intentsHref } from '@/lib/console/filters';
import { retryUnlessRefused } from '@/lib/console/api-client';
import { fetchStatusCounts } from '@/lib/console/intents-client';
import { intentKeys, type IntentListFilters } from '@/lib/intents/keys';
import { INTENT_STATUSES } from '@/lib/shared/intent-states';
import type { CountsAnswer } from '@/lib/counts/answer';
import type { ResolvedSearch } from '@/lib/search/intents';
import styles from './intents.module.css';

const fmt = (n: number) => n.toLocaleString('en-US');

/** Two significant digits: an estimate should not look more precise than it is. */
const rough = (n: number) => (n < 100 ? n : Number(n.toPrecision(2)));

/** A tab's count as text: exact, "at least" past the cap, "about" when estimated, or unknown. */
function countText(answer: CountsAnswer | undefined, n: number | null | undefined): string {
  if (!answer || n === undefined) return '…';
  if (n === null || answer.counts === null) return '?';
  if (answer.estimated) return `≈${fmt(rough(n))}`;
  return answer.capped ? `${fmt(n)}+` : fmt(n);
}

const SEARCH_KIND: Partial<Record<ResolvedSearch['kind'], string>> = {
  id: 'Matched by id',
  idPrefix: 'Intents whose id starts so',
  idOrPayload: 'Ids that start so, and payloads that contain it',
  source: 'Matched as a source',
  payload: 'Matched in the payload',
};

/** Status tabs with counts (under the current search and filters), the search and the filters; all live in the URL. */
export function StatusFilterBar({ filters, searchKind = null }: { filters: IntentListFilters; searchKind?: ResolvedSearch['kind'] | null }) {
  const counts = useQuery({ queryKey: intentKeys.count(filters), queryFn: () => fetchStatusCounts(filters), retry: retryUnlessRefused });
  const answer = counts.data;
  const tabs = [{ status: null, label: 'All', count: answer?.total }, ...INTENT_STATUSES.map((s) => ({ status: s, label: s, count: answer ? (answer.counts?.[s] ?? null) : undefined }))];
  const note = !answer
    ? null
    : answer.counts === null
      ? 'Counting this search took too long: the counts are not shown.'
      : answer.estimated
        ? 'Estimated: counting every match would take too long.'
        : answer.capped
          ? `At least: counting stops at ${fmt(answer.cap)} matches.`
          : null;
  const base = {
    q: filters.q,
    source: filters.source,
    from: filters.from,
    to: filters.to,
    contention: filters.contention,
    contentionOperation: filters.contentionOperation,
    contentionFrom: filters.contentionFrom,
    contentionTo: filters.contentionTo,
  };
  return (
    <div className={styles.filterBar}>
      <nav aria-label="Filter by status" className={styles.tabs}>
        {tabs.map((t) => {
          const active = filters.status === t.status;
          return (
            <Link
              key={t.label}
              href={intentsHref({ ...base, status: t.status })}
              className={`${styles.tab} ${active ? styles.tabActive : ''}`}
              aria-current={active ? 'page' : undefined}
              data-testid={`status-tab-${t.label}`}
              title={note ?? undefined}
            >
              <span>{t.label === 'All' ? 'All' : t.label.charAt(0) + t.label.slice(1).toLowerCase()}</span>
              <span className={styles.tabCount} data-testid={`count-${t.label}`}>
                {countText(answer, t.count)}
              </span>
            </Link>
          );
        })}
      </nav>
      {note && (
        <p className={`muted ${styles.countNote}`} data-testid="counts-note">
          {note}
        </p>
      )}
      {counts.isError && <ErrorState title="Counts could not be loaded" error={counts.error} onRetry={() => void counts.refetch()} retrying={counts.isFetching} />}
      <ContentionFilterChip filters={filters} />
      <SearchBox key={JSON.stringify(base)} filters={filters} searchKind={searchKind} />
    </div>
  );
}

/**
 * `datetime-local` has no zone; the console writes every time in UTC, so these boxes are read and filled in UTC
 * too (an on-call engineer pastes a time from the audit log or the timeline as it is). The URL carries ISO instants.
 */
function toUtcInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString().slice(0, 16);
}

function fromUtcInput(value: string): string | null {
  if (!value) return null;
  const d = new Date(`${value}Z`);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** "/" jumps to the search from anywhere on the page (not while typing somewhere else). */
function useSlashFocuses(input: RefObject<HTMLInputElement | null>): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (e.key !== '/' || e.metaKey || e.ctrlKey || e.altKey) return;
      if (target && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName))) return;
      e.preventDefault();
      input.current?.focus();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [input]);
}

/** A search refines the list it was typed over: the status and the contention filter (from the Contention page) stay. */
function searchHref(filters: IntentListFilters, typed: { text: string; source: string; from: string; to: string }): string {
  return intentsHref({
    status: filters.status,
    q: typed.text.trim(),
    source: typed.source.trim() || null,
    from: fromUtcInput(typed.from),
    to: fromUtcInput(typed.to),
    contention: filters.contention,
    contentionOperation: filters.contentionOperation,
    contentionFrom: filters.contentionFrom,
    contentionTo: filters.contentionTo,
  });
}

function SearchBox({ filters, searchKind }: { filters: IntentListFilters; searchKind: ResolvedSearch['kind'] | null }) {
  const router = useRouter();
  const [text, setText] = useState(filters.q);
  const [source, setSource] = useState(filters.source ?? '');
  const [from, setFrom] = useState(toUtcInput(filters.from));
  const [to, setTo] = useState(toUtcInput(filters.to));
  const input = useRef<HTMLInputElement>(null);
  useSlashFocuses(input);
  const anyFilter = filters.q || filters.source || filters.from || filters.to;
  const rangeBackwards = from && to && from > to;
  return (
    <form
      role="search"
      aria-label="Search intents"
      className={styles.search}
      onSubmit={(e) => {
        e.preventDefault();
        if (!rangeBackwards) router.push(searchHref(filters, { text, source, from, to }));
      }}
    >
      <label htmlFor="intent-search" className="visually-hidden">
        Search payload, id or source
      </label>
      <input
        id="intent-search"
        ref={input}
        type="search"
        className={`field ${styles.searchInput}`}
        placeholder="Id, source, city: Osaka, {&quot;amount&quot;: 12}…  ( / )"
        value={text}
        maxLength={200}
        onChange={(e) => setText(e.target.value)}
        aria-describedby={searchKind && SEARCH_KIND[searchKind] ? 'intent-search-kind' : undefined}
      />
      <label htmlFor="intent-source" className="visually-hidden">
        Source
      </label>
      <input id="intent-source" className={`field ${styles.sourceInput}`} placeholder="Source" value={source} maxLength={255} onChange={(e) => setSource(e.target.value)} />
      <label htmlFor="intent-from" className={styles.inlineLabel}>
        Updated from (UTC)
      </label>
      <input id="intent-from" type="datetime-local" className="field" value={from} onChange={(e) => setFrom(e.target.value)} />
      <label htmlFor="intent-to" className={styles.inlineLabel}>
        to (UTC)
      </label>
      <input id="intent-to" type="datetime-local" className="field" value={to} onChange={(e) => setTo(e.target.value)} aria-invalid={rangeBackwards ? true : undefined} />
      <button type="submit" className="btn" disabled={Boolean(rangeBackwards)} title={rangeBackwards ? 'The range ends before it starts' : undefined}>
        Search
      </button>
      {anyFilter && (
        <Link href={intentsHref({ status: filters.status })} className="btn btn-ghost">
          Clear
        </Link>
      )}
      {filters.q && searchKind && SEARCH_KIND[searchKind] && (
        <span id="intent-search-kind" className="muted" data-testid="search-kind">
          {SEARCH_KIND[searchKind]}
        </span>
      )}
    </form>
  );
}
