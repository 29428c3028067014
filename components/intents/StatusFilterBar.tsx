'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';
import { ErrorState } from '@/components/ui/ErrorState';
import { intentsHref } from '@/lib/console/filters';
import { fetchStatusCounts } from '@/lib/console/intents-client';
import { intentKeys, type IntentListFilters } from '@/lib/intents/keys';
import { INTENT_STATUSES } from '@/lib/intents/state-machine';
import styles from './intents.module.css';

const fmt = (n: number) => n.toLocaleString('en-US');

/** Status tabs with counts (under the current search) and the payload search; both live in the URL. */
export function StatusFilterBar({ filters }: { filters: IntentListFilters }) {
  const counts = useQuery({ queryKey: intentKeys.count(filters.q), queryFn: () => fetchStatusCounts(filters.q) });
  const total = counts.data ? Object.values(counts.data).reduce((a, b) => a + b, 0) : null;
  const tabs = [{ status: null, label: 'All', count: total }, ...INTENT_STATUSES.map((s) => ({ status: s, label: s, count: counts.data?.[s] ?? null }))];
  return (
    <div className={styles.filterBar}>
      <nav aria-label="Filter by status" className={styles.tabs}>
        {tabs.map((t) => {
          const active = filters.status === t.status;
          return (
            <Link key={t.label} href={intentsHref({ status: t.status, q: filters.q })} className={`${styles.tab} ${active ? styles.tabActive : ''}`} aria-current={active ? 'page' : undefined} data-testid={`status-tab-${t.label}`}>
              <span>{t.label === 'All' ? 'All' : t.label.charAt(0) + t.label.slice(1).toLowerCase()}</span>
              <span className={styles.tabCount} data-testid={`count-${t.label}`}>
                {t.count === null ? '…' : fmt(t.count)}
              </span>
            </Link>
          );
        })}
      </nav>
      {counts.isError && <ErrorState title="Counts could not be loaded" error={counts.error} onRetry={() => void counts.refetch()} retrying={counts.isFetching} />}
      <SearchBox key={filters.q} filters={filters} />
    </div>
  );
}

function SearchBox({ filters }: { filters: IntentListFilters }) {
  const router = useRouter();
  const [text, setText] = useState(filters.q);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    // "/" jumps to the search from anywhere on the page (not while typing somewhere else).
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (e.key !== '/' || e.metaKey || e.ctrlKey || e.altKey) return;
      if (target && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName))) return;
      e.preventDefault();
      input.current?.focus();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  return (
    <form
      role="search"
      aria-label="Search intents"
      className={styles.search}
      onSubmit={(e) => {
        e.preventDefault();
        router.push(intentsHref({ status: filters.status, q: text.trim() }));
      }}
    >
      <label htmlFor="intent-search" className="visually-hidden">
        Search payload
      </label>
      <input
        id="intent-search"
        ref={input}
        type="search"
        className={`field ${styles.searchInput}`}
        placeholder="Search payload text…  ( / )"
        value={text}
        maxLength={200}
        onChange={(e) => setText(e.target.value)}
      />
      <button type="submit" className="btn">
        Search
      </button>
      {filters.q && (
        <Link href={intentsHref({ status: filters.status })} className="btn btn-ghost">
          Clear search
        </Link>
      )}
    </form>
  );
}
