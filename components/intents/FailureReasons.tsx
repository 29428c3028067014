'use client';

import { useQuery } from '@tanstack/react-query';
import { Panel } from '@/components/ui/PageHeader';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { Skeleton } from '@/components/ui/Skeleton';
import { formatUtc } from '@/components/ui/time';
import { failedAttempts, type FailedAttempt } from '@/lib/console/failed-attempts';
import { fetchPipelineRuns, pipelineKeys } from '@/lib/console/workers-client';
import type { FailureMark } from '@/lib/pipeline/types';
import styles from './intents.module.css';

/**
 * Why a FAILED intent failed, where an operator deciding what to do with it looks first: the status change that
 * failed it (who, when, the reason recorded), then every failed pipeline attempt, newest first — attempt and round,
 * when, the door and actor, the bridge and its error. It reads the pipeline runs the Pipeline runs panel reads
 * (one query, refreshed by the live feed).
 */
export function FailureReasons({ id }: { id: string }) {
  const history = useQuery({ queryKey: pipelineKeys.runs(id), queryFn: () => fetchPipelineRuns(id) });
  return (
    <Panel title="Why it failed" id="failure">
      {history.isPending && <Skeleton label="Loading why it failed" lines={3} />}
      {history.isError && <p className="muted">The failure could not be loaded: {history.error.message}</p>}
      {history.data && <FailureBody failure={history.data.failure} attempts={failedAttempts(history.data.runs)} />}
    </Panel>
  );
}

function FailureBody({ failure, attempts }: { failure: FailureMark | null; attempts: FailedAttempt[] }) {
  return (
    <div data-testid="failure-reasons">
      {failure ? (
        <p className={styles.failureMark} data-testid="failure-mark">
          Marked FAILED by <strong>{failure.actor}</strong> <RelativeTime iso={failure.at} />
          {failure.from && ` (from ${failure.from}${failure.version !== null ? `, version ${failure.version}` : ''})`}
          {': '}
          {failure.reason ? <q>{failure.reason}</q> : <span className="muted">no reason was given.</span>}
        </p>
      ) : (
        <p className="muted">The change that failed it is no longer on record.</p>
      )}
      {attempts.length === 0 ? (
        <p className="muted">No pipeline attempt failed: it was marked FAILED by hand.</p>
      ) : (
        <ol className={styles.attempts} aria-label="Failed attempts, newest first">
          {attempts.map((a) => (
            <li key={`${a.runId}:${a.bridge}`} className={styles.attempt} data-testid="failed-attempt">
              <div className={styles.historyHead}>
                <strong>
                  Attempt {a.attempt}
                  {a.round > 1 ? ` of round ${a.round}` : ''}
                </strong>
                <span className="muted">{formatUtc(a.at)}</span>
                {a.bridge && <span className="mono">{a.bridge}</span>}
                <span className="muted">
                  {a.door} · {a.actor}
                </span>
              </div>
              <p className={styles.attemptError}>{a.error}</p>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
