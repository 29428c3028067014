'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useMemo, type ReactNode } from 'react';
import { ErrorState } from '@/components/ui/ErrorState';
import { LiveIndicator } from '@/components/ui/LiveIndicator';
import { PageHeader, Panel } from '@/components/ui/PageHeader';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { formatUtc } from '@/components/ui/time';
import { Skeleton } from '@/components/ui/Skeleton';
import { StatusBadge } from '@/components/ui/StatusBadge';
import { shortId } from '@/lib/console/ids';
import type { ListNavigation } from '@/lib/console/list-nav';
import { fetchIntent } from '@/lib/console/intents-client';
import { correctionLines, mergeDiff, type DiffLine, type JsonRecord } from '@/lib/console/json-diff';
import { intentKeys } from '@/lib/intents/keys';
import type { Correction, IntentWithCorrections } from '@/lib/shared/intent-types';
import { CorrectionForm } from './CorrectionForm';
import { DiffView } from './DiffView';
import { FailureReasons } from './FailureReasons';
import { JsonView } from './JsonView';
import { StatusActions } from './StatusActions';
import { RowLockNotice } from '@/components/locks/RowLockNotice';
import { HistoryHead } from './HistoryHead';
import styles from './intents.module.css';

export type DetailPermissions = { status: boolean; correct: boolean };

/**
 * The intent itself: facts and status actions, payload, correction form and correction history; `aside` holds the
 * server-streamed history panels (audit timeline, conflict events) beside them. `lockTimeoutMs` is the configured
 * row-lock wait, shown while a change waits for a lock (omitted: a generic wording).
 */
export function IntentDetail({ id, permissions, aside, lockTimeoutMs, nav }: { id: string; permissions: DetailPermissions; aside: ReactNode; lockTimeoutMs?: number; nav?: ListNavigation }) {
  const detail = useQuery({ queryKey: intentKeys.detail(id), queryFn: () => fetchIntent(id) });
  const header = <IntentHeader id={id} intent={detail.data} nav={nav} />;
  if (detail.isPending) {
    return (
      <>
        {header}
        <Skeleton label="Loading the intent" lines={6} />
      </>
    );
  }
  if (detail.isError && !detail.data) {
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
      {/* A refresh that failed keeps what was shown, and what was typed: only this says it may be out of date. */}
      {detail.isError && (
        <div className={styles.alert} role="status" data-testid="detail-stale">
          This intent could not be refreshed ({detail.error instanceof Error ? detail.error.message : 'no answer'}): what you see is from{' '}
          {formatUtc(new Date(detail.dataUpdatedAt).toISOString())}.{' '}
          <button type="button" className="btn btn-sm" onClick={() => void detail.refetch()} disabled={detail.isFetching}>
            {detail.isFetching ? 'Trying…' : 'Try again'}
          </button>
        </div>
      )}
      <div className={styles.detailGrid}>
        <div className={styles.column}>
          <Panel title="Status" id="status">
            <IntentFacts intent={intent} />
            <RowLockNotice intentId={intent.id} />
            <StatusActions intent={intent} allowed={permissions.status} lockTimeoutMs={lockTimeoutMs} />
          </Panel>
          {intent.status === 'FAILED' && <FailureReasons id={intent.id} />}
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

function IntentHeader({ id, intent, nav }: { id: string; intent?: IntentWithCorrections; nav?: ListNavigation }) {
  return (
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
          <span className="mono">Intent {shortId(id)}</span>
          {intent && <StatusBadge status={intent.status} />}
        </>
      }
      description={<span className="mono">{id}</span>}
      actions={<LiveIndicator />}
    />
  );
}

function IntentFacts({ intent }: { intent: IntentWithCorrections }) {
  return (
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
  );
}

function CorrectionPanel({ intent, lockTimeoutMs }: { intent: IntentWithCorrections; lockTimeoutMs?: number }) {
  if (intent.status === 'COMPLETED' || intent.status === 'FAILED') {
    return (
      <Panel title="Apply a correction" id="correct">
        <p className="muted">A {intent.status} intent takes no corrections{intent.status === 'FAILED' ? ': move it back to RECEIVED first' : ''}.</p>
      </Panel>
    );
  }
  return (
    <Panel title="Apply a correction" id="correct">
      <CorrectionForm intent={intent} lockTimeoutMs={lockTimeoutMs} />
    </Panel>
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
          <HistoryHead actor={c.actor} at={c.createdAt}>
            <span className="muted">
              v{c.versionBefore} → v{c.versionAfter}
            </span>
            {c.statusBefore !== c.statusAfter && (
              <span className="muted">
                {c.statusBefore} → {c.statusAfter}
              </span>
            )}
            <span className="muted">via {c.source}</span>
          </HistoryHead>
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
