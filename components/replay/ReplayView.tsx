'use client';

import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';
import { cancelReplayAction } from '@/app/actions/replay';
import styles from '@/components/locks/console.module.css';
import { ErrorState } from '@/components/ui/ErrorState';
import { PageHeader } from '@/components/ui/PageHeader';
import { Skeleton } from '@/components/ui/Skeleton';
import { fetchReplayRun, fetchReplayRuns, replayKeys } from '@/lib/console/replay-client';
import type { ConcurrencySettings } from '@/lib/env';
import type { Targets } from '@/lib/replay/targets';
import type { ScenarioName } from '@/lib/replay/types';
import { FlagsPanel } from './FlagsPanel';
import { RunDetail } from './RunDetail';
import { RunsTable } from './RunsTable';
import { StartPanel } from './StartPanel';

type ScenarioInfo = { name: ScenarioName; title: string; source: string; description: string };

export type ReplayViewProps = {
  environment: string;
  guard: { allowed: boolean; reason: string | null };
  canRun: boolean;
  settings: ConcurrencySettings;
  targets: Targets | null;
  targetsProblem: string | null;
  scenarios: ScenarioInfo[];
  initialRunId: string | null;
  /** The earlier run the shown run is compared with, when the engineer chose one (else the default). */
  initialAgainst: string | null;
  /** Why the run the link named is not the one shown (unknown, ambiguous or not an id). */
  linkProblem?: string | null;
};

/**
 * The runs and the one shown: the one picked, else the one running, else the newest. Both poll faster while a run is
 * in progress; when the shown run stops, the list (statuses, verdicts) is re-read.
 */
function useReplayRuns(initialRunId: string | null, initialAgainst: string | null) {
  const queryClient = useQueryClient();
  const [selected, setSelected] = useState<string | null>(initialRunId);
  const [against, setAgainst] = useState<string | null>(initialRunId ? initialAgainst : null);
  const runs = useQuery({
    queryKey: replayKeys.runs(),
    queryFn: fetchReplayRuns,
    // Idle, it still looks every few seconds: a run started from another tab or by a colleague shows here while it runs.
    refetchInterval: (q) => (q.state.data?.runs.some((x) => x.status === 'running') ? 2000 : 4000),
  });
  const running = runs.data?.runs.find((x) => x.status === 'running') ?? null;
  const shownId = selected ?? running?.id ?? runs.data?.runs[0]?.id ?? null;
  const run = useQuery({
    queryKey: replayKeys.run(shownId ?? 'none', against),
    queryFn: () => fetchReplayRun(shownId!, against),
    enabled: shownId !== null,
    refetchInterval: (q) => (q.state.data?.run.status === 'running' ? 1000 : false),
  });
  const lastStatus = useRef<string | undefined>(undefined);
  const status = run.data?.run.status;
  useEffect(() => {
    if (lastStatus.current === 'running' && status && status !== 'running') void queryClient.invalidateQueries({ queryKey: replayKeys.runs() });
    lastStatus.current = status;
  }, [status, queryClient]);
  const refreshRuns = () => void queryClient.invalidateQueries({ queryKey: replayKeys.runs() });
  return { runs, run, running, shownId, setSelected, against, setAgainst, refreshRuns };
}

/**
 * The Replay page: the go/no-go view of a rollout. Start a run (staging and development only), watch it live,
 * cancel it, read each scenario against the targets, pin a run as the baseline, and compare a run with the pinned
 * baseline, the previous comparable run, or any earlier run of its scenarios.
 */
export function ReplayView(props: ReplayViewProps) {
  const router = useRouter();
  const { runs, run, running, shownId, setSelected, against, setAgainst, refreshRuns } = useReplayRuns(props.initialRunId, props.initialAgainst);
  const select = (id: string, compareWith: string | null = null) => {
    setSelected(id);
    setAgainst(compareWith);
    router.replace(`/replay?run=${id}${compareWith ? `&against=${compareWith}` : ''}`, { scroll: false });
  };

  return (
    <div className={styles.page}>
      <PageHeader
        title="Replay"
        description="Contention replay: the concurrency scenarios run against this environment's engine and database and are judged against the performance targets — the go/no-go view before a rollout. What a run provokes stays out of the Contention page and the metrics."
      />

      <StartPanel
        {...props}
        running={running ? { id: running.id, requestedBy: running.requestedBy, createdAt: running.createdAt } : null}
        onStarted={(id) => {
          select(id);
          refreshRuns();
        }}
      />

      <section className={styles.section} data-testid="replay-run">
        <h2>Run</h2>
        {props.linkProblem && (
          <div className={`${styles.banner} ${styles.bannerWarn}`} role="status" data-testid="replay-link-problem">
            {props.linkProblem} The latest run is shown instead.
          </div>
        )}
        {!shownId && runs.isSuccess && <div className={styles.empty}>No replay has run against this database yet.</div>}
        {shownId && run.isPending && <Skeleton lines={6} label="Loading the run" />}
        {shownId && run.isError && !run.data && <ErrorState title="The run could not be loaded" error={run.error} onRetry={() => void run.refetch()} retrying={run.isFetching} />}
        {run.data && (
          <RunDetail
            data={run.data}
            against={against}
            onCompareWith={(id) => select(run.data.run.id, id)}
            canCancel={props.canRun}
            onCancel={async () => {
              const result = await cancelReplayAction(run.data.run.id);
              await run.refetch();
              return result.ok ? null : result.error.message;
            }}
          />
        )}
      </section>

      <section className={styles.section}>
        <h2>Runs</h2>
        {runs.isPending && <Skeleton lines={4} label="Loading runs" />}
        {runs.isError && !runs.data && <ErrorState title="The runs could not be loaded" error={runs.error} onRetry={() => void runs.refetch()} retrying={runs.isFetching} />}
        {runs.data && runs.data.runs.length === 0 && <div className={styles.empty}>None yet.</div>}
        {runs.data && runs.data.runs.length > 0 && <RunsTable runs={runs.data.runs} shownId={shownId} onSelect={select} />}
      </section>

      <FlagsPanel settings={props.settings} targets={props.targets} targetsProblem={props.targetsProblem} />
    </div>
  );
}
