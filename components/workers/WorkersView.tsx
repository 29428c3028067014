'use client';

import { useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useState, useTransition } from 'react';
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { cancelRetryAction, retryNowAction, setWorkersPausedAction } from '@/app/actions/workers';
import styles from '@/components/locks/console.module.css';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { ErrorState } from '@/components/ui/ErrorState';
import { PageHeader } from '@/components/ui/PageHeader';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { Skeleton } from '@/components/ui/Skeleton';
import { formatUtc, formatUtcTime } from '@/components/ui/time';
import { fetchWorkersOverview, workerKeys } from '@/lib/console/workers-client';
import type { ThroughputPoint, WorkersOverview } from '@/lib/workers/queries';

type Props = {
  canControl: boolean;
  bridgeSet: string[];
  bridges: { name: string; description: string; accepts: string[] }[];
  settings: { leaseMs: number; maxAttempts: number; retryBaseMs: number; retryMaxMs: number };
};

type Pending = { kind: 'pause' | 'resume' } | { kind: 'retry-now' | 'cancel'; intentId: string } | null;

const SERIES: { key: Exclude<keyof ThroughputPoint, 'minute'>; label: string; color: string }[] = [
  { key: 'claimed', label: 'claimed', color: 'var(--chart-retries)' },
  { key: 'completed', label: 'completed', color: 'var(--chart-already-applied)' },
  { key: 'retried', label: 'retried', color: 'var(--chart-lock-timeouts)' },
  { key: 'failed', label: 'failed', color: 'var(--chart-deadlocks)' },
  { key: 'rescued', label: 'rescued (stale claims)', color: 'var(--chart-conflicts)' },
];
const TICK = { fill: 'var(--muted)', fontSize: 11 };
const AXIS_LINE = { stroke: 'var(--border-strong)' };
const TOOLTIP = {
  contentStyle: { background: 'var(--surface)', border: '1px solid var(--border-strong)', borderRadius: 6, color: 'var(--text)', fontSize: 12 },
  itemStyle: { color: 'var(--text)' },
  labelStyle: { color: 'var(--text)', fontWeight: 600 },
};

const ago = (ms: number) => (ms < 1000 ? 'just now' : ms < 60_000 ? `${Math.round(ms / 1000)} s ago` : `${Math.round(ms / 60_000)} min ago`);
const shortId = (id: string) => id.slice(0, 8);

function IntentLink({ id }: { id: string }) {
  return (
    <Link href={`/intents/${id}`} className={styles.mono} title={id}>
      {shortId(id)}
    </Link>
  );
}

function ThroughputChart({ data }: { data: ThroughputPoint[] }) {
  return (
    <div className={styles.chartBox} data-testid="workers-throughput">
      <ResponsiveContainer width="100%" height="100%">
        <LineChart data={data} margin={{ top: 8, right: 16, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" vertical={false} />
          <XAxis dataKey="minute" tickFormatter={(t) => formatUtcTime(String(t)).slice(0, 5)} minTickGap={32} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} />
          <YAxis allowDecimals={false} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} width={44} />
          <Tooltip {...TOOLTIP} labelFormatter={(t) => formatUtc(String(t), { seconds: false })} />
          <Legend wrapperStyle={{ fontSize: 12 }} formatter={(v) => <span style={{ color: 'var(--text)' }}>{v}</span>} />
          {SERIES.map((s) => (
            <Line key={s.key} dataKey={s.key} name={s.label} stroke={s.color} dot={false} strokeWidth={2} type="linear" isAnimationActive={false} />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}

function WorkerState({ state }: { state: WorkersOverview['workers'][number]['state'] }) {
  const cls = state === 'running' ? styles.badgeOk : state === 'lost' ? styles.badgeRoot : state === 'stopping' ? styles.badgeWait : '';
  return <span className={`${styles.badge} ${cls}`}>{state}</span>;
}

/**
 * The Workers page: live workers and their heartbeats, the queue by state, claims in flight (stale ones marked),
 * scheduled retries, recent failures, throughput over the last hour, and the operators' controls (pause and resume
 * claiming, retry now, cancel a retry), each confirmed first and audited.
 */
export function WorkersView({ canControl, bridgeSet, bridges, settings }: Props) {
  const queryClient = useQueryClient();
  const overview = useQuery({ queryKey: workerKeys.overview(), queryFn: fetchWorkersOverview, refetchInterval: 2000 });
  const [pending, setPending] = useState<Pending>(null);
  const [message, setMessage] = useState<{ tone: 'ok' | 'error'; text: string } | null>(null);
  const [busy, startTransition] = useTransition();

  const confirm = () => {
    const p = pending;
    if (!p) return;
    startTransition(async () => {
      const intent = 'intentId' in p ? p.intentId : '';
      const result =
        p.kind === 'pause' || p.kind === 'resume'
          ? await setWorkersPausedAction({ paused: p.kind === 'pause' })
          : p.kind === 'retry-now'
            ? await retryNowAction({ intentId: intent })
            : await cancelRetryAction({ intentId: intent });
      // A pause is confirmed by the paused banner itself (who paused, since when), not by a second one saying the same.
      const done = { pause: null, resume: 'Claiming resumed.', 'retry-now': `Intent ${shortId(intent)} is due now.`, cancel: `The retry of ${shortId(intent)} is cancelled.` }[p.kind];
      setMessage(!result.ok ? { tone: 'error', text: result.error.message } : done ? { tone: 'ok', text: done } : null);
      setPending(null);
      await queryClient.invalidateQueries({ queryKey: workerKeys.all });
    });
  };

  const data = overview.data;
  const paused = data?.paused.paused ?? false;
  const noRights = canControl ? undefined : 'Needs the operator role';

  return (
    <div className={styles.page}>
      <PageHeader
        title="Workers"
        description={`Workers claim due intents (FOR UPDATE SKIP LOCKED) and run the pipeline: ${bridgeSet.join(' → ')}. A claim not heartbeated for ${settings.leaseMs / 1000} s is rescued; failures retry with exponential backoff (from ${settings.retryBaseMs} ms, at most ${Math.round(settings.retryMaxMs / 1000)} s) up to ${settings.maxAttempts} attempts, then the intent is FAILED.`}
        actions={
          data && (
            <button type="button" className={`btn ${paused ? 'btn-primary' : 'btn-danger'}`} disabled={!canControl || busy} title={noRights} onClick={() => setPending({ kind: paused ? 'resume' : 'pause' })}>
              {paused ? 'Resume claiming' : 'Pause claiming'}
            </button>
          )
        }
      />
      {message && (
        <div role="status" className={`${styles.banner} ${message.tone === 'ok' ? styles.bannerOk : styles.bannerError}`}>
          {message.text}
        </div>
      )}
      {paused && data && (
        <div role="status" className={`${styles.banner} ${styles.bannerWarn}`}>
          Claiming is paused for every worker{data.paused.changedBy ? ` (by ${data.paused.changedBy}${data.paused.changedAt ? `, ${formatUtc(data.paused.changedAt)}` : ''})` : ''}. Runs in flight finish; nothing new is claimed.
        </div>
      )}
      {overview.error && !data && <ErrorState error={overview.error} onRetry={() => void overview.refetch()} />}
      {!data && !overview.error && <Skeleton label="Loading workers" lines={8} />}
      {data && (
        <>
          <div className={styles.tiles} aria-label="Queue depth">
            {(
              [
                ['ready', data.queue.ready, 'due now'],
                ['scheduled', data.queue.scheduled, 'waiting for their time'],
                ['running', data.queue.running, 'claimed'],
                ['stale claims', data.queue.stale, 'lease ran out, not yet rescued'],
                ['failed', data.queue.failed, 'gave up'],
                ['rescued', data.totals.rescued, 'stale claims rescued, all time'],
              ] as const
            ).map(([label, value, hint]) => (
              <div key={label} className={styles.stat} title={hint}>
                <div className={styles.statValue}>{value}</div>
                <div className={styles.statLabel}>{label}</div>
              </div>
            ))}
            {/* The queue's latency, as Sidekiq, Oban and River show it: how long the oldest due intent has waited. */}
            <div className={styles.stat} title="How long the longest-waiting due intent has waited for a worker" data-testid="oldest-ready">
              <div className={styles.statValue}>{data.oldestReadySince ? <RelativeTime iso={data.oldestReadySince} /> : '—'}</div>
              <div className={styles.statLabel}>oldest ready, due since</div>
            </div>
          </div>

          <section className={styles.section} aria-labelledby="workers-list">
            <h2 id="workers-list">Workers</h2>
            <p className={styles.sectionNote}>Every worker process registers itself and heartbeats; one that stops heartbeating is shown as lost and its claims are rescued.</p>
            {data.workers.length === 0 ? (
              <div className={styles.empty}>No worker has registered. Start one with `npm run worker` (npm start runs one in development).</div>
            ) : (
              <div className={styles.scroll}>
                <table className={styles.table}>
                  <thead>
                    <tr>
                      <th>worker</th>
                      <th>state</th>
                      <th>heartbeat</th>
                      <th>claims / concurrency</th>
                      <th>host, pid</th>
                      <th>started</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.workers.map((w) => (
                      <tr key={w.id}>
                        <td className={styles.mono}>{w.name}</td>
                        <td>
                          <WorkerState state={w.state} />
                        </td>
                        <td className="nowrap" title={formatUtc(w.heartbeatAt)}>
                          {ago(w.heartbeatAgeMs)}
                        </td>
                        <td>
                          {w.state === 'stopped' ? '—' : `${w.inFlight} / ${w.concurrency}`}
                        </td>
                        <td className={styles.mono}>
                          {w.host}, {w.pid}
                        </td>
                        <td className="nowrap">{formatUtc(w.startedAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>

          <section className={styles.section} aria-labelledby="workers-throughput-heading">
            <h2 id="workers-throughput-heading">Throughput and failures, last hour (per minute)</h2>
            <ThroughputChart data={data.throughput} />
          </section>

          <div className={styles.grid2}>
            <section className={styles.section} aria-labelledby="workers-claims">
              <h2 id="workers-claims">Claims in flight</h2>
              {data.claims.length === 0 ? (
                <div className={styles.empty}>No claims in flight.</div>
              ) : (
                <table className={styles.table}>
                  <thead>
                    <tr>
                      <th>intent</th>
                      <th>worker</th>
                      <th>attempt</th>
                      <th>lease until</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.claims.map((c) => (
                      <tr key={c.intentId}>
                        <td>
                          <IntentLink id={c.intentId} />
                        </td>
                        <td className={styles.mono}>{c.claimedBy}</td>
                        <td>
                          {c.attempt} / {c.maxAttempts}
                        </td>
                        <td className="nowrap">
                          {c.leaseUntil ? formatUtcTime(c.leaseUntil) : '—'} {c.stale && <span className={`${styles.badge} ${styles.badgeRoot}`}>stale</span>}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </section>

            <section className={styles.section} aria-labelledby="workers-scheduled">
              <h2 id="workers-scheduled">Scheduled retries</h2>
              {data.scheduled.length === 0 ? (
                <div className={styles.empty}>Nothing is waiting for a retry.</div>
              ) : (
                <table className={styles.table}>
                  <thead>
                    <tr>
                      <th>intent</th>
                      <th>attempt</th>
                      <th>due</th>
                      <th>last error</th>
                      <th>
                        <span className="visually-hidden">actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.scheduled.map((s) => (
                      <tr key={s.intentId}>
                        <td>
                          <IntentLink id={s.intentId} />
                        </td>
                        <td>
                          {s.attempt} / {s.maxAttempts}
                        </td>
                        <td className="nowrap">{formatUtcTime(s.runAfter)}</td>
                        <td className="wrap">{s.lastError ?? '—'}</td>
                        <td className="nowrap">
                          <button type="button" className="btn btn-sm" disabled={!canControl || busy} title={noRights} onClick={() => setPending({ kind: 'retry-now', intentId: s.intentId })}>
                            Retry now
                          </button>{' '}
                          <button type="button" className="btn btn-sm btn-danger" disabled={!canControl || busy} title={noRights} onClick={() => setPending({ kind: 'cancel', intentId: s.intentId })}>
                            Cancel
                          </button>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </section>
          </div>

          <div className={styles.grid2}>
            <section className={styles.section} aria-labelledby="workers-failed">
              <h2 id="workers-failed">Recent failures</h2>
              {data.failed.length === 0 ? (
                <div className={styles.empty}>No intent has run out of attempts.</div>
              ) : (
                <table className={styles.table}>
                  <thead>
                    <tr>
                      <th>intent</th>
                      <th>when</th>
                      <th>reason</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.failed.map((f) => (
                      <tr key={f.intentId}>
                        <td>
                          <IntentLink id={f.intentId} />
                        </td>
                        <td className="nowrap">{f.finishedAt ? formatUtc(f.finishedAt) : '—'}</td>
                        <td className="wrap">{f.lastError}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </section>
            <section className={styles.section} aria-labelledby="workers-bridges">
              <h2 id="workers-bridges">The BridgeSet</h2>
              <table className={styles.table}>
                <thead>
                  <tr>
                    <th>bridge</th>
                    <th>runs on</th>
                    <th>contract</th>
                  </tr>
                </thead>
                <tbody>
                  {bridges.map((b) => (
                    <tr key={b.name}>
                      <td className={styles.mono}>{b.name}</td>
                      <td>{b.accepts.join(', ')}</td>
                      <td className="wrap">{b.description}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          </div>
        </>
      )}

      <ConfirmDialog
        open={pending !== null}
        title={pending?.kind === 'pause' ? 'Pause claiming?' : pending?.kind === 'resume' ? 'Resume claiming?' : pending?.kind === 'retry-now' ? 'Retry now?' : 'Cancel this retry?'}
        confirmLabel={pending?.kind === 'pause' ? 'Pause claiming' : pending?.kind === 'resume' ? 'Resume claiming' : pending?.kind === 'retry-now' ? 'Retry now' : 'Cancel the retry'}
        tone={pending?.kind === 'pause' || pending?.kind === 'cancel' ? 'danger' : 'primary'}
        pending={busy}
        onConfirm={confirm}
        onCancel={() => setPending(null)}
      >
        {pending?.kind === 'pause' && <p>No worker will claim new work until claiming is resumed. Runs in flight finish. This is recorded in the audit log.</p>}
        {pending?.kind === 'resume' && <p>Every worker starts claiming due intents again. This is recorded in the audit log.</p>}
        {pending?.kind === 'retry-now' && <p>Intent {shortId(pending.intentId)} becomes due now; the next free worker claims it. This is recorded in its audit trail.</p>}
        {pending?.kind === 'cancel' && <p>Intent {shortId(pending.intentId)} stays as it is and no worker claims it again (an operator can still run its pipeline or retry it). This is recorded in its audit trail.</p>}
      </ConfirmDialog>
    </div>
  );
}
