'use client';

import { useQuery } from '@tanstack/react-query';
import { useRef } from 'react';
import styles from '@/components/locks/console.module.css';
import { ErrorState } from '@/components/ui/ErrorState';
import { useFocusOutcomeWhenLost } from '@/components/ui/focus';
import { PageHeader } from '@/components/ui/PageHeader';
import { Skeleton } from '@/components/ui/Skeleton';
import { formatUtc } from '@/components/ui/time';
import { fetchWorkersOverview, workerKeys } from '@/lib/console/workers-client';
import type { WorkersOverview } from '@/lib/workers/queries';
import { BridgeSetTable, type BridgeInfo } from './BridgeSetTable';
import { RerunFailedList } from '@/components/pipeline/RerunFailedList';
import { ClaimsTable, ScheduledTable, WaitsTable } from './QueueTables';
import { QueueTiles } from './QueueTiles';
import { ReplicasTable } from './ReplicasTable';
import { ThroughputChart } from './ThroughputChart';
import { useWorkerControls, type Pending } from './useWorkerControls';
import { WorkerControlDialog } from './WorkerControlDialog';
import { WorkersTable } from './WorkersTable';

type Props = {
  canControl: boolean;
  bridgeSet: string[];
  bridges: BridgeInfo[];
  settings: { leaseMs: number; maxAttempts: number; retryBaseMs: number; retryMaxMs: number };
};

/**
 * The Workers page: live workers and their heartbeats, the queue by state, claims in flight (stale ones marked),
 * scheduled retries, recent failures (with rerun from a step, several at once), throughput over the last hour, and the operators' controls (pause and resume
 * claiming, retry now, cancel a retry), each confirmed first and audited.
 */
export function WorkersView({ canControl, bridgeSet, bridges, settings }: Props) {
  const overview = useQuery({ queryKey: workerKeys.overview(), queryFn: fetchWorkersOverview, refetchInterval: 2000 });
  const controls = useWorkerControls();
  // A confirmed retry or cancel takes its row (and its button) out of the list: the focus goes to what it answered.
  const outcome = useRef<HTMLDivElement>(null);
  useFocusOutcomeWhenLost(outcome, controls.message);
  const data = overview.data;
  const paused = data?.paused.paused ?? false;
  const noRights = canControl ? undefined : 'Needs the operator role';
  const controlsOff = !canControl || controls.busy;

  return (
    <div className={styles.page}>
      <PageHeader
        title="Workers"
        description={`Workers claim due intents (FOR UPDATE SKIP LOCKED) and run the pipeline: ${bridgeSet.join(' → ')}. A claim not heartbeated for ${settings.leaseMs / 1000} s is rescued; failures retry with exponential backoff (from ${settings.retryBaseMs} ms, at most ${Math.round(settings.retryMaxMs / 1000)} s) up to ${settings.maxAttempts} attempts, then the intent is FAILED.`}
        actions={
          data && (
            <button type="button" className={`btn ${paused ? 'btn-primary' : 'btn-danger'}`} disabled={controlsOff} title={noRights} onClick={() => controls.setPending({ kind: paused ? 'resume' : 'pause' })}>
              {paused ? 'Resume claiming' : 'Pause claiming'}
            </button>
          )
        }
      />
      {controls.message && (
        <div ref={outcome} tabIndex={-1} role="status" className={`${styles.banner} ${controls.message.tone === 'ok' ? styles.bannerOk : styles.bannerError}`}>
          {controls.message.text}
        </div>
      )}
      {paused && data && (
        <div role="status" className={`${styles.banner} ${styles.bannerWarn}`}>
          Claiming is paused for every worker{data.paused.changedBy ? ` (by ${data.paused.changedBy}${data.paused.changedAt ? `, ${formatUtc(data.paused.changedAt)}` : ''})` : ''}. Runs in flight finish; nothing new is claimed.
        </div>
      )}
      {overview.error && !data && <ErrorState error={overview.error} onRetry={() => void overview.refetch()} />}
      {!data && !overview.error && <Skeleton label="Loading workers" lines={8} />}
      {data && <WorkersSections data={data} bridgeSet={bridgeSet} bridges={bridges} controlsOff={controlsOff} noRights={noRights} onAsk={controls.setPending} />}
      <WorkerControlDialog pending={controls.pending} busy={controls.busy} onConfirm={controls.confirm} onCancel={() => controls.setPending(null)} />
    </div>
  );
}

function WorkersSections({ data, bridgeSet, bridges, controlsOff, noRights, onAsk }: { data: WorkersOverview; bridgeSet: string[]; bridges: BridgeInfo[]; controlsOff: boolean; noRights?: string; onAsk: (p: Pending) => void }) {
  return (
    <>
      <QueueTiles data={data} />
      <WorkersTable data={data} />
      <section className={styles.section} aria-labelledby="workers-throughput-heading">
        <h2 id="workers-throughput-heading">Throughput and failures, last hour (per minute)</h2>
        <ThroughputChart data={data.throughput} />
      </section>
      <div className={styles.grid2}>
        <ClaimsTable data={data} />
        <ScheduledTable data={data} disabled={controlsOff} title={noRights} onAsk={onAsk} />
      </div>
      <WaitsTable data={data} />
      <div className={styles.grid2}>
        <RerunFailedList failed={data.failed} total={data.queue.failed} bridges={bridgeSet} canRun={!controlsOff} />
        <BridgeSetTable bridges={bridges} />
      </div>
      <ReplicasTable data={data} />
    </>
  );
}
