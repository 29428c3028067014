'use client';

import { useQuery } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { retryPipelineAction, runPipelineAction } from '@/app/actions/pipeline';
import styles from '@/components/locks/console.module.css';
import { ErrorState } from '@/components/ui/ErrorState';
import { useFocusOutcomeWhenLost } from '@/components/ui/focus';
import { Panel } from '@/components/ui/PageHeader';
import { Skeleton } from '@/components/ui/Skeleton';
import { formatUtc } from '@/components/ui/time';
import { refusalVersion, useActionNotice } from '@/lib/console/action-notice';
import { fetchIntent } from '@/lib/console/intents-client';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import { fetchPipelineRuns, pipelineKeys } from '@/lib/console/workers-client';
import { intentKeys } from '@/lib/intents/keys';
import type { PipelineHistoryRun, PipelineMode, PipelineRun, PipelineStep } from '@/lib/pipeline/types';
import type { WaitView } from '@/lib/pipeline/waits';
import type { ActionError } from '@/lib/console/action-result';
import { LockHolderLink } from '@/components/locks/LockHolderLink';
import own from './pipeline.module.css';
import { RerunFromStep } from '@/components/pipeline/RerunFromStep';
import { WaitPanel } from '@/components/pipeline/WaitPanel';

const RUN_TONE: Record<PipelineRun['status'], string> = {
  running: styles.badgeWait,
  succeeded: styles.badgeOk,
  failed: styles.badgeRoot,
  finished_with_errors: styles.badgeWait,
  interrupted: styles.badgeWait,
  waiting: styles.badgeWait,
  abandoned: styles.badgeRoot,
  released: styles.badgeWait,
};
const STEP_TONE: Record<string, string> = { completed: styles.badgeOk, replayed: styles.badgeOk, failed: styles.badgeRoot, abandoned: styles.badgeRoot, running: styles.badgeWait, waiting: styles.badgeWait };

type Notice = { tone: 'ok' | 'error'; text: string; error?: ActionError };

/**
 * The intent's pipeline runs with their step results, and the operator's "Run pipeline" (any status that can enter
 * it) or, on a FAILED intent, "Run pipeline again" (back to RECEIVED at the version shown, then the pipeline at
 * once — the status card's "Move back to RECEIVED" only moves it). The runs live under the intent's detail key, so
 * the live feed refreshes them as bridges start and finish; the run's banner goes once the intent moves past it.
 */
export function PipelineRunsPanel({ id, canRun, bridges = [] }: { id: string; canRun: boolean; bridges?: string[] }) {
  const intent = useQuery({ queryKey: intentKeys.detail(id), queryFn: () => fetchIntent(id) });
  const runs = useQuery({ queryKey: pipelineKeys.runs(id), queryFn: () => fetchPipelineRuns(id) });
  const [mode, setMode] = useState<PipelineMode>('FAILFAST');
  const version = intent.data?.version;
  const { notice, show } = useActionNotice<Notice>(version);
  // An answer, a run or a rerun removes the control that started it (the wait's form, a closed dialog's opener).
  const outcome = useRef<HTMLDivElement>(null);
  useFocusOutcomeWhenLost(outcome, notice);

  const pipeline = useActionMutation({
    action: (again: boolean) => (again ? retryPipelineAction({ id, mode, expectedVersion: version }) : runPipelineAction({ id, mode })),
    onOk: (data) => show({ tone: 'ok', text: `Run ${data.run.status.replace(/_/g, ' ')}: the intent is ${data.intent.status}.` }, data.intent.version),
    onFailure: (error) => show({ tone: 'error', text: error.message, error }, refusalVersion(error, version ?? 0)),
    invalidate: () => [intentKeys.detail(id)],
  });
  const status = intent.data?.status;
  return (
    <Panel
      title="Pipeline runs"
      id="pipeline-runs"
      actions={
        status && status !== 'COMPLETED' ? (
          <div className={styles.actions}>
            <PipelineActions mode={mode} setMode={setMode} again={status === 'FAILED'} canRun={canRun} busy={pipeline.isPending} onRun={(again) => pipeline.mutate(again)} />
            <RerunFromStep id={id} status={status} bridges={bridges} canRun={canRun} onDone={({ atVersion, ...message }) => show(message, atVersion)} />
          </div>
        ) : undefined
      }
    >
      {notice && (
        <div ref={outcome} tabIndex={-1} role="status" className={`${styles.banner} ${notice.tone === 'ok' ? styles.bannerOk : styles.bannerError}`}>
          {notice.text}
          {notice.error && <LockHolderLink error={notice.error} />}
        </div>
      )}
      {runs.error && !runs.data && <ErrorState error={runs.error} onRetry={() => void runs.refetch()} />}
      {!runs.data && !runs.error && <Skeleton label="Loading pipeline runs" lines={3} />}
      {runs.data?.waits[0]?.state === 'waiting' && <WaitPanel key={runs.data.waits[0].id} id={id} wait={runs.data.waits[0]} canAnswer={canRun} onDone={(m) => show(m, version ?? 0)} />}
      {runs.data && runs.data.runs.length === 0 && <div className={styles.empty}>The pipeline has not run on this intent.</div>}
      {runs.data?.runs.map((run, i, all) => (
        // Newest first: the run after this one in the list is the one before it, which it resumes if it stopped to wait.
        <RunCard key={run.id} run={run} resumed={resumes(run, all[i + 1])} wait={run.wait} />
      ))}
    </Panel>
  );
}

function PipelineActions(p: { mode: PipelineMode; setMode: (m: PipelineMode) => void; again: boolean; canRun: boolean; busy: boolean; onRun: (again: boolean) => void }) {
  const noRights = p.canRun ? undefined : 'Needs the operator role';
  return (
    <>
      <label className="visually-hidden" htmlFor="pipeline-mode">
        Mode
      </label>
      <select id="pipeline-mode" value={p.mode} onChange={(e) => p.setMode(e.target.value as PipelineMode)} disabled={!p.canRun || p.busy}>
        <option value="FAILFAST">FAILFAST</option>
        <option value="CONTINUE">CONTINUE</option>
      </select>
      <button
        type="button"
        className="btn btn-sm btn-primary"
        disabled={!p.canRun || p.busy}
        title={noRights ?? (p.again ? 'Moves the intent back to RECEIVED and runs the pipeline on it now' : undefined)}
        onClick={() => p.onRun(p.again)}
      >
        {p.busy ? 'Running…' : p.again ? 'Run pipeline again' : 'Run pipeline'}
      </button>
    </>
  );
}

/**
 * Whether `run` resumed `before` (the run before it): in the same round, after it stopped at a wait that had been
 * decided by the time `run` started. A run started while the wait was still open (an operator's, say) asked again and
 * did not resume anything.
 */
function resumes(run: PipelineHistoryRun, before: PipelineHistoryRun | undefined): boolean {
  if (!before || before.round !== run.round || before.status !== 'waiting') return false;
  const decidedAt = before.wait?.decidedAt;
  return decidedAt !== null && decidedAt !== undefined && Date.parse(decidedAt) <= Date.parse(run.startedAt);
}

const DECIDED: Record<Exclude<WaitView['state'], 'waiting'>, string> = {
  answered: 'answered',
  timed_out: 'missed its deadline',
  cancelled: 'cancelled: the intent left the round',
};

/**
 * A run that stopped to wait stays `waiting` in its record, since that is how it ended; once the wait is decided the
 * card says so, and whether a worker has resumed the run yet, instead of reading as if it still waited.
 */
function WaitOutcome({ wait }: { wait: WaitView }) {
  if (wait.state === 'waiting') return null;
  const answer = wait.state === 'answered' && wait.answer !== null ? `: ${JSON.stringify(wait.answer)}` : '';
  return (
    <p className={styles.hint} data-testid="run-wait-outcome">
      “{wait.name}” {DECIDED[wait.state]}
      {wait.answeredBy ? ` by ${wait.answeredBy}` : ''}
      {wait.decidedAt ? ` at ${formatUtc(wait.decidedAt)}` : ''}
      {answer}. {wait.resumedAt ? `Resumed at ${formatUtc(wait.resumedAt)} (the run above).` : wait.state === 'cancelled' ? '' : 'A worker resumes the run.'}
    </p>
  );
}

function RunCard({ run, resumed, wait }: { run: PipelineHistoryRun; resumed: boolean; wait?: WaitView }) {
  const decided = wait && wait.state !== 'waiting';
  return (
    <div className={own.run} data-testid="pipeline-run">
      <div className={own.runHead}>
        <span className={`${styles.badge} ${decided ? styles.badgeOk : RUN_TONE[run.status]}`}>{decided ? 'waited' : run.status.replace(/_/g, ' ')}</span>
        <span>
          Attempt {run.attempt} of round {run.round}
          {resumed ? ' (resumed after the wait)' : ''}, {run.mode}, {run.door} by {run.actor}
        </span>
        <span className={styles.hint}>{formatUtc(run.startedAt)}</span>
      </div>
      {run.steps.length === 0 ? (
        // A worker's run is recorded at its first write; until then (or when its worker died before) it has no steps.
        <p className={styles.hint}>{run.status === 'running' ? 'Its first bridge is running; its steps show here once they are recorded.' : 'No step was recorded.'}</p>
      ) : (
        <table className={`${styles.table} ${own.steps}`}>
          <colgroup>
            <col className={own.bridge} />
            <col className={own.status} />
            <col />
          </colgroup>
          <tbody>
            {run.steps.map((s, i) => (
              <tr key={i}>
                <td className={styles.mono}>{s.bridge}</td>
                <td>
                  <span className={`${styles.badge} ${decided && s.status === 'waiting' ? styles.badgeOk : (STEP_TONE[s.status] ?? '')}`}>{decided && s.status === 'waiting' ? 'waited' : s.status}</span>
                </td>
                <td>
                  <StepOutcome step={s} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {wait && <WaitOutcome wait={wait} />}
      {run.error && <p className={`${styles.fieldError} ${own.runError}`}>{run.error}</p>}
    </div>
  );
}

/** A step's error, or its result as compact JSON: wrapped inside the cell, and scrolled there when long. */
function StepOutcome({ step }: { step: PipelineStep }) {
  if (step.error) return <pre className={`${own.result} ${own.error}`}>{step.error}</pre>;
  if (step.result === undefined) return null;
  return (
    <pre className={own.result} data-testid="step-result">
      {JSON.stringify(step.result)}
    </pre>
  );
}
