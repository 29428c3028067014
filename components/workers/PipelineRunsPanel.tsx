'use client';

import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { retryPipelineAction, runPipelineAction } from '@/app/actions/pipeline';
import styles from '@/components/locks/console.module.css';
import { ErrorState } from '@/components/ui/ErrorState';
import { Panel } from '@/components/ui/PageHeader';
import { Skeleton } from '@/components/ui/Skeleton';
import { formatUtc } from '@/components/ui/time';
import { fetchIntent } from '@/lib/console/intents-client';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import { fetchPipelineRuns, pipelineKeys } from '@/lib/console/workers-client';
import { intentKeys } from '@/lib/intents/keys';
import type { PipelineMode, PipelineRun } from '@/lib/pipeline/types';
import type { ActionError } from '@/lib/console/action-result';
import { LockHolderLink } from '@/components/locks/LockHolderLink';
import { RerunFromStep } from '@/components/pipeline/RerunFromStep';

const RUN_TONE: Record<PipelineRun['status'], string> = {
  running: styles.badgeWait,
  succeeded: styles.badgeOk,
  failed: styles.badgeRoot,
  finished_with_errors: styles.badgeWait,
  interrupted: styles.badgeWait,
  abandoned: styles.badgeRoot,
};
const STEP_TONE: Record<string, string> = { completed: styles.badgeOk, replayed: styles.badgeOk, failed: styles.badgeRoot, abandoned: styles.badgeRoot, running: styles.badgeWait };

/**
 * The intent's pipeline runs with their step results, and the operator's "Run pipeline" (any status that can enter
 * it) and "Retry" (FAILED: back to RECEIVED at the version shown, then the pipeline). The runs live under the
 * intent's detail key, so the live feed refreshes them as bridges start and finish.
 */
export function PipelineRunsPanel({ id, canRun, bridges = [] }: { id: string; canRun: boolean; bridges?: string[] }) {
  const intent = useQuery({ queryKey: intentKeys.detail(id), queryFn: () => fetchIntent(id) });
  const runs = useQuery({ queryKey: pipelineKeys.runs(id), queryFn: () => fetchPipelineRuns(id) });
  const [mode, setMode] = useState<PipelineMode>('FAILFAST');
  const [message, setMessage] = useState<{ tone: 'ok' | 'error'; text: string; error?: ActionError } | null>(null);
  const status = intent.data?.status;

  const pipeline = useActionMutation({
    action: (retry: boolean) => (retry ? retryPipelineAction({ id, mode, expectedVersion: intent.data?.version }) : runPipelineAction({ id, mode })),
    onOk: (data) => setMessage({ tone: 'ok', text: `Run ${data.run.status.replace(/_/g, ' ')}: the intent is ${data.intent.status}.` }),
    onFailure: (error) => setMessage({ tone: 'error', text: error.message, error }),
    invalidate: () => [intentKeys.detail(id)],
  });
  const busy = pipeline.isPending;
  const act = (retry: boolean) => pipeline.mutate(retry);

  const noRights = canRun ? undefined : 'Needs the operator role';
  return (
    <Panel
      title="Pipeline runs"
      id="pipeline-runs"
      actions={
        status && status !== 'COMPLETED' ? (
          <div className={styles.actions}>
            <label className="visually-hidden" htmlFor="pipeline-mode">
              Mode
            </label>
            <select id="pipeline-mode" value={mode} onChange={(e) => setMode(e.target.value as PipelineMode)} disabled={!canRun || busy}>
              <option value="FAILFAST">FAILFAST</option>
              <option value="CONTINUE">CONTINUE</option>
            </select>
            {status === 'FAILED' ? (
              <button type="button" className="btn btn-sm btn-primary" disabled={!canRun || busy} title={noRights} onClick={() => act(true)}>
                {busy ? 'Retrying…' : 'Retry'}
              </button>
            ) : (
              <button type="button" className="btn btn-sm btn-primary" disabled={!canRun || busy} title={noRights} onClick={() => act(false)}>
                {busy ? 'Running…' : 'Run pipeline'}
              </button>
            )}
            <RerunFromStep id={id} status={status} bridges={bridges} canRun={canRun} onDone={setMessage} />
          </div>
        ) : undefined
      }
    >
      {message && (
        <div role="status" className={`${styles.banner} ${message.tone === 'ok' ? styles.bannerOk : styles.bannerError}`}>
          {message.text}
          {message.error && <LockHolderLink error={message.error} />}
        </div>
      )}
      {runs.error && !runs.data && <ErrorState error={runs.error} onRetry={() => void runs.refetch()} />}
      {!runs.data && !runs.error && <Skeleton label="Loading pipeline runs" lines={3} />}
      {runs.data && runs.data.runs.length === 0 && <div className={styles.empty}>The pipeline has not run on this intent.</div>}
      {runs.data?.runs.map((run) => (
        <div key={run.id} style={{ marginBottom: 12 }}>
          <div className={styles.actions}>
            <span className={`${styles.badge} ${RUN_TONE[run.status]}`}>{run.status.replace(/_/g, ' ')}</span>
            <span>
              {run.mode}, round {run.round}, {run.door} by {run.actor}
            </span>
            <span className={styles.hint}>{formatUtc(run.startedAt)}</span>
          </div>
          <table className={styles.table}>
            <tbody>
              {run.steps.map((s, i) => (
                <tr key={i}>
                  <td className={styles.mono}>{s.bridge}</td>
                  <td>
                    <span className={`${styles.badge} ${STEP_TONE[s.status] ?? ''}`}>{s.status}</span>
                  </td>
                  <td className="wrap">{s.error ?? (s.result !== undefined ? JSON.stringify(s.result) : '')}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {run.error && <p className={styles.fieldError}>{run.error}</p>}
        </div>
      ))}
    </Panel>
  );
}
