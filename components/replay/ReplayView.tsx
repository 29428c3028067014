'use client';

import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState, useTransition } from 'react';
import { cancelReplayAction, startReplayAction } from '@/app/actions/replay';
import styles from '@/components/locks/console.module.css';
import { ErrorState } from '@/components/ui/ErrorState';
import { PageHeader } from '@/components/ui/PageHeader';
import { Skeleton } from '@/components/ui/Skeleton';
import { permissionDeniedMessage } from '@/lib/auth/permissions';
import { fetchReplayRun, fetchReplayRuns, replayKeys } from '@/lib/console/replay-client';
import { operationLabel } from '@/lib/contention/series';
import type { ConcurrencySettings, LockStrategy } from '@/lib/env';
import type { Targets } from '@/lib/replay/targets';
import type { ScenarioName, StrategyFlag } from '@/lib/replay/types';
import { RunDetail } from './RunDetail';
import { VerdictBadge, when } from './format';
import r from './replay.module.css';

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
};

/**
 * The Replay page: the go/no-go view of a rollout. Start a run (staging and development only), watch it live,
 * cancel it, read each scenario against the targets, and compare the run with the previous one.
 */
export function ReplayView(props: ReplayViewProps) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const [selected, setSelected] = useState<string | null>(props.initialRunId);

  const runs = useQuery({
    queryKey: replayKeys.runs(),
    queryFn: fetchReplayRuns,
    refetchInterval: (q) => (q.state.data?.runs.some((x) => x.status === 'running') ? 2000 : 15_000),
  });
  const running = runs.data?.runs.find((x) => x.status === 'running') ?? null;
  const shownId = selected ?? running?.id ?? runs.data?.runs[0]?.id ?? null;

  const run = useQuery({
    queryKey: replayKeys.run(shownId ?? 'none'),
    queryFn: () => fetchReplayRun(shownId!),
    enabled: shownId !== null,
    refetchInterval: (q) => (q.state.data?.run.status === 'running' ? 1000 : false),
  });

  // When the shown run stops, the list (statuses, verdicts) is out of date.
  const lastStatus = useRef<string | undefined>(undefined);
  const status = run.data?.run.status;
  useEffect(() => {
    if (lastStatus.current === 'running' && status && status !== 'running') void queryClient.invalidateQueries({ queryKey: replayKeys.runs() });
    lastStatus.current = status;
  }, [status, queryClient]);

  const select = (id: string) => {
    setSelected(id);
    router.replace(`/replay?run=${id}`, { scroll: false });
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
          void queryClient.invalidateQueries({ queryKey: replayKeys.runs() });
        }}
      />

      <section className={styles.section} data-testid="replay-run">
        <h2>Run</h2>
        {!shownId && runs.isSuccess && <div className={styles.empty}>No replay has run against this database yet.</div>}
        {shownId && run.isPending && <Skeleton lines={6} label="Loading the run" />}
        {shownId && run.isError && !run.data && <ErrorState title="The run could not be loaded" error={run.error} onRetry={() => void run.refetch()} retrying={run.isFetching} />}
        {run.data && (
          <RunDetail
            data={run.data}
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
        {runs.data && runs.data.runs.length > 0 && (
          <div className={styles.scroll}>
            <table className={styles.table} data-testid="replay-runs">
              <thead>
                <tr>
                  <th>started</th>
                  <th>by</th>
                  <th>from</th>
                  <th>environment</th>
                  <th>flags</th>
                  <th>scenarios</th>
                  <th>status</th>
                  <th>verdict</th>
                </tr>
              </thead>
              <tbody>
                {runs.data.runs.map((x) => (
                  <tr key={x.id} className={x.id === shownId ? r.selected : undefined}>
                    <td>
                      <button type="button" className="btn btn-ghost btn-sm" onClick={() => select(x.id)} aria-current={x.id === shownId ? 'true' : undefined}>
                        {when(x.createdAt)}
                      </button>
                    </td>
                    <td>{x.requestedBy}</td>
                    <td>{x.door}</td>
                    <td>{x.environment}</td>
                    <td>
                      {Object.entries(x.strategies)
                        .map(([op, s]) => `${operationLabel(op)}: ${s}${x.strategyOverrides.includes(op) ? ' (this run)' : ''}`)
                        .join(', ')}
                    </td>
                    <td>
                      {x.scenarios.filter((s) => s.verdict === 'pass').length}/{x.scenarios.length} pass{x.sizePreset !== 'full' ? ` (${x.sizePreset})` : ''}
                    </td>
                    <td>{x.status === 'running' ? `running ${x.progress.done}/${x.progress.total}` : x.status}</td>
                    <td>
                      <VerdictBadge verdict={x.verdict} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <FlagsPanel settings={props.settings} targets={props.targets} targetsProblem={props.targetsProblem} />
    </div>
  );
}

/** The strategies a run may choose for its own calls, to compare with the configured ones without a redeploy. */
const STRATEGY_CHOICES: { flag: StrategyFlag; label: string }[] = [
  { flag: 'reevaluate', label: 'Correction strategy' },
  { flag: 'update_status', label: 'Status update strategy' },
];

function StartPanel(props: ReplayViewProps & { running: { id: string; requestedBy: string; createdAt: string } | null; onStarted: (id: string) => void }) {
  const [chosen, setChosen] = useState<Set<ScenarioName>>(() => new Set(props.scenarios.map((s) => s.name)));
  const [size, setSize] = useState<'full' | 'small'>('full');
  // '' = as configured; otherwise this run's own choice (the console's other traffic keeps the configured one).
  const [strategies, setStrategies] = useState<Record<StrategyFlag, '' | LockStrategy>>({ reevaluate: '', update_status: '' });
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();

  const reasons: string[] = [];
  if (!props.guard.allowed) reasons.push(props.guard.reason ?? `The replay is disabled in ${props.environment}.`);
  if (!props.canRun) reasons.push(`${permissionDeniedMessage('replay.run')} Ask an administrator if you need it.`);
  if (props.running) reasons.push(`A run is in progress (started by ${props.running.requestedBy} at ${when(props.running.createdAt)}): one at a time keeps the figures honest.`);
  if (chosen.size === 0) reasons.push('Pick at least one scenario.');
  const disabled = reasons.length > 0 || pending;

  const toggle = (name: ScenarioName) =>
    setChosen((prev) => {
      const next = new Set(prev);
      if (next.has(name)) next.delete(name);
      else next.add(name);
      return next;
    });

  return (
    <section className={styles.section} aria-labelledby="replay-start-heading">
      <h2 id="replay-start-heading">Start a run</h2>
      <p className={styles.sectionNote}>
        Each scenario creates its own intents, tagged as replay data (hidden from the Intents page), and drives this environment’s engine. The run goes on
        in the background of the console’s server; you can leave the page and come back. A strategy chosen here applies to this run’s own calls only, so two
        strategies compare run against run before the flag is changed for everyone.
      </p>
      <fieldset disabled={!props.guard.allowed || !props.canRun} style={{ border: 0, padding: 0, margin: 0 }}>
        <legend className="visually-hidden">Scenarios</legend>
        <div className={r.scenarioList}>
          {props.scenarios.map((s) => (
            <label key={s.name} className={r.scenarioOption} title={s.description}>
              <input type="checkbox" checked={chosen.has(s.name)} onChange={() => toggle(s.name)} />
              <span>
                {s.title} <span className={styles.mono}>({s.name})</span>
              </span>
            </label>
          ))}
        </div>
      </fieldset>
      <div className={r.startRow}>
        <label className={r.scenarioOption}>
          Size
          <select value={size} onChange={(e) => setSize(e.target.value as 'full' | 'small')} disabled={!props.guard.allowed || !props.canRun}>
            <option value="full">full (the sizes the targets are set for)</option>
            <option value="small">small (a quick smoke run)</option>
          </select>
        </label>
        {STRATEGY_CHOICES.map(({ flag, label }) => (
          <label key={flag} className={r.scenarioOption}>
            {label}
            <select
              value={strategies[flag]}
              onChange={(e) => setStrategies((prev) => ({ ...prev, [flag]: e.target.value as '' | LockStrategy }))}
              disabled={!props.guard.allowed || !props.canRun}
              data-testid={`replay-strategy-${flag}`}
            >
              <option value="">as configured ({props.settings.strategies[flag]})</option>
              <option value="pessimistic">pessimistic, for this run</option>
              <option value="optimistic">optimistic, for this run</option>
              <option value="adaptive">adaptive, for this run</option>
            </select>
          </label>
        ))}
        <button
          type="button"
          className="btn btn-primary"
          disabled={disabled}
          aria-describedby={reasons.length ? 'replay-disabled-reason' : undefined}
          data-testid="replay-start"
          onClick={() => {
            setError(null);
            startTransition(async () => {
              const chosenStrategies = Object.fromEntries(Object.entries(strategies).filter(([, s]) => s !== ''));
              const result = await startReplayAction({ scenarios: chosen.size === props.scenarios.length ? 'all' : [...chosen], size, strategies: chosenStrategies });
              if (result.ok) props.onStarted(result.data.id);
              else setError(result.error.message);
            });
          }}
        >
          {pending ? 'Starting…' : 'Start replay'}
        </button>
      </div>
      {reasons.length > 0 && (
        <div id="replay-disabled-reason" className={r.reason} data-testid="replay-disabled-reason">
          {reasons.map((x) => (
            <p key={x} style={{ margin: 0 }}>
              {x}
            </p>
          ))}
        </div>
      )}
      {error && (
        <div className={`${styles.banner} ${styles.bannerError}`} role="alert">
          {error}
        </div>
      )}
    </section>
  );
}

function FlagsPanel({ settings, targets, targetsProblem }: { settings: ConcurrencySettings; targets: Targets | null; targetsProblem: string | null }) {
  const retry = settings.retry;
  return (
    <div className={styles.grid2}>
      <section className={styles.section} data-testid="replay-flags">
        <h2>Feature flags in force</h2>
        <p className={styles.sectionNote}>The rollout’s switches (environment variables, listed in docs/CONFIGURATION.md). Every run records the values it ran with, so two strategies compare run against run.</p>
        <dl className={r.flags}>
          <dt>environment</dt>
          <dd>{settings.environment}</dd>
          {Object.entries(settings.strategies).map(([op, s]) => (
            <FlagRow key={op} name={`${operationLabel(op).toLowerCase()} strategy`} value={s} />
          ))}
          <FlagRow name="lock timeout" value={`${settings.lockTimeoutMs} ms`} />
          <FlagRow name="retries (version conflicts)" value={`${retry.maxAttempts} tries, ${retry.baseMs} ms × ${retry.factor}^n ± ${retry.jitterMs} ms, max ${retry.maxDelayMs} ms`} />
          <FlagRow name="deadlock attempts" value={String(settings.deadlockMaxAttempts)} />
          <FlagRow name="database pool" value={`${settings.poolSize} connections`} />
          <FlagRow
            name="adaptive strategy"
            value={`no row lock while an intent is uncontended; the row lock at once for ${settings.contentionMemoryMs / 1000} s after a version conflict on it (recorded in Postgres, so every instance knows)`}
          />
          <FlagRow name="prepared statements" value={settings.preparedStatements ? 'on' : 'off'} />
        </dl>
      </section>
      <section className={styles.section} data-testid="replay-targets">
        <h2>Targets</h2>
        <p className={styles.sectionNote}>The product’s performance targets, unless overridden with REPLAY_TARGETS.</p>
        {targetsProblem && (
          <div className={`${styles.banner} ${styles.bannerError}`} role="alert">
            REPLAY_TARGETS cannot be used: {targetsProblem}
          </div>
        )}
        {targets && (
          <dl className={r.flags}>
            <FlagRow name="status updates" value={`≥ ${targets.throughputMinPerSec} /s and ≥ ${Math.round(targets.baselineMinRatio * 100)} % of raw SQL`} />
            <FlagRow name="uncontended lock p95" value={`< ${targets.lockAcquisitionP95MaxMs} ms`} />
            <FlagRow name="50 corrections p95" value={`< ${targets.corrections50P95MaxMs} ms`} />
            <FlagRow name="deadlock recovery mean" value={`< ${targets.deadlockRecoveryMeanMaxMs} ms`} />
            <FlagRow name="NOWAIT refusal" value={`< ${targets.nowaitFailFastMaxMs} ms`} />
            <FlagRow
              name="regression"
              value={`a figure ${Math.round(targets.regressionTolerance * 100)} % worse than the previous run and outside the spread of recent runs with the same settings; throughput only when its share of the raw-SQL baseline fell too (docs/REPLAY.md)`}
            />
          </dl>
        )}
      </section>
    </div>
  );
}

function FlagRow({ name, value }: { name: string; value: string }) {
  return (
    <>
      <dt>{name}</dt>
      <dd>{value}</dd>
    </>
  );
}
