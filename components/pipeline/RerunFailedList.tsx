'use client';

import Link from 'next/link';
import { useState } from 'react';
import styles from '@/components/locks/console.module.css';
import { formatUtc } from '@/components/ui/time';
import { shortId } from '@/lib/console/ids';
import type { FailedView } from '@/lib/workers/queries';
import { RerunManyDialog, type RerunTargets } from './RerunManyDialog';
import own from './rerun.module.css';

const matches = (f: FailedView, text: string) => !text || (f.lastError ?? '').toLowerCase().includes(text.toLowerCase());

/**
 * The Workers page's failed list (intents that ran out of attempts), with rerun from a step for several at once: tick
 * intents, or take every failed intent whose last error contains the filter's text (beyond the rows shown), then pick
 * the bridge, read the summed plan and confirm.
 */
export function RerunFailedList({ failed, total, bridges, canRun }: { failed: FailedView[]; total: number; bridges: string[]; canRun: boolean }) {
  const [filter, setFilter] = useState('');
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [targets, setTargets] = useState<RerunTargets | null>(null);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const shown = failed.filter((f) => matches(f, filter));
  const chosen = shown.filter((f) => selected.has(f.intentId)).map((f) => f.intentId);
  const toggle = (id: string) => setSelected((s) => (s.has(id) ? new Set([...s].filter((x) => x !== id)) : new Set([...s, id])));
  const noRights = canRun ? undefined : 'Needs the operator role';
  // The list is the newest few; the filter below looks at those, while a rerun of all failed takes every one.
  const partial = total > failed.length;
  return (
    <section className={styles.section} aria-labelledby="workers-failed">
      <h2 id="workers-failed">Recent failures</h2>
      {partial && (
        <p className={styles.sectionNote} data-testid="failed-shown">
          The {failed.length} most recent of {total} failed intents. “Rerun all failed…” takes every failed intent whose error contains the filter’s
          text, shown here or not; its plan counts them before anything runs.
        </p>
      )}
      {message && (
        <div role="status" className={`${styles.banner} ${message.ok ? styles.bannerOk : styles.bannerError}`}>
          {message.text}
        </div>
      )}
      <div className={own.toolbar}>
        <label className="visually-hidden" htmlFor="failed-filter">
          Filter by error
        </label>
        <input id="failed-filter" className="field" placeholder="error contains…" value={filter} onChange={(e) => setFilter(e.target.value)} />
        <button type="button" className="btn btn-sm" disabled={!canRun || chosen.length === 0} title={noRights} onClick={() => setTargets({ ids: chosen })}>
          Rerun selected ({chosen.length})…
        </button>
        <button type="button" className="btn btn-sm" disabled={!canRun || failed.length === 0} title={noRights} onClick={() => setTargets({ errorContains: filter.trim() })}>
          {filter.trim() ? 'Rerun all failed matching the filter…' : 'Rerun all failed…'}
        </button>
      </div>
      {shown.length === 0 ? (
        <div className={styles.empty}>
          {failed.length === 0
            ? 'No intent has run out of attempts.'
            : partial
              ? `None of the ${failed.length} shown matches the filter; a rerun of all failed looks at all ${total}.`
              : 'No failure matches the filter.'}
        </div>
      ) : (
        <FailedRows rows={shown} selected={selected} onToggle={toggle} />
      )}
      {targets && (
        <RerunManyDialog
          targets={targets}
          bridges={bridges}
          onDone={(text, ok) => setMessage({ text, ok })}
          onClose={() => {
            setTargets(null);
            setSelected(new Set());
          }}
        />
      )}
    </section>
  );
}

function FailedRows({ rows, selected, onToggle }: { rows: FailedView[]; selected: ReadonlySet<string>; onToggle: (id: string) => void }) {
  return (
    <table className={styles.table}>
      <thead>
        <tr>
          <th className={own.check}>
            <span className="visually-hidden">select</span>
          </th>
          <th>intent</th>
          <th>when</th>
          <th>reason</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((f) => (
          <tr key={f.intentId} className={selected.has(f.intentId) ? styles.selectedRow : undefined}>
            <td>
              <input type="checkbox" aria-label={`Select ${shortId(f.intentId)}`} checked={selected.has(f.intentId)} onChange={() => onToggle(f.intentId)} />
            </td>
            <td>
              <Link href={`/intents/${f.intentId}`} className={styles.mono} title={f.intentId}>
                {shortId(f.intentId)}
              </Link>
            </td>
            <td className="nowrap">{f.finishedAt ? formatUtc(f.finishedAt) : '—'}</td>
            <td className="wrap">{f.lastError}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
