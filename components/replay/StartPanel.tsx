'use client';

import { useState } from 'react';
import { startReplayAction } from '@/app/actions/replay';
import styles from '@/components/locks/console.module.css';
import { permissionDeniedMessage } from '@/lib/auth/permissions';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import type { LockStrategy } from '@/lib/env';
import type { ScenarioName, StrategyFlag } from '@/lib/replay/types';
import { when } from './format';
import type { ReplayViewProps } from './ReplayView';
import r from './replay.module.css';

/** The strategies a run may choose for its own calls, to compare with the configured ones without a redeploy. */
const STRATEGY_CHOICES: { flag: StrategyFlag; label: string }[] = [
  { flag: 'reevaluate', label: 'Correction strategy' },
  { flag: 'update_status', label: 'Status update strategy' },
];

type Running = { id: string; requestedBy: string; createdAt: string } | null;
/** '' = as configured; otherwise this run's own choice (the console's other traffic keeps the configured one). */
type StrategyChoice = Record<StrategyFlag, '' | LockStrategy>;

/** Why a run cannot start now, in words (empty: it can). */
function blockers(props: ReplayViewProps, running: Running, chosen: number): string[] {
  const reasons: string[] = [];
  if (!props.guard.allowed) reasons.push(props.guard.reason ?? `The replay is disabled in ${props.environment}.`);
  if (!props.canRun) reasons.push(`${permissionDeniedMessage('replay.run')} Ask an administrator if you need it.`);
  if (running) reasons.push(`A run is in progress (started by ${running.requestedBy} at ${when(running.createdAt)}): one at a time keeps the figures honest.`);
  if (chosen === 0) reasons.push('Pick at least one scenario.');
  return reasons;
}

/** Start a run: which scenarios, at which size, with which strategies for its own calls. */
export function StartPanel(props: ReplayViewProps & { running: Running; onStarted: (id: string) => void }) {
  const [chosen, setChosen] = useState<Set<ScenarioName>>(() => new Set(props.scenarios.map((s) => s.name)));
  const [size, setSize] = useState<'full' | 'small'>('full');
  const [strategies, setStrategies] = useState<StrategyChoice>({ reevaluate: '', update_status: '' });
  const [error, setError] = useState<string | null>(null);
  const start = useActionMutation({
    action: startReplayAction,
    onOk: (run) => props.onStarted(run.id),
    onFailure: (failure) => setError(failure.message),
    invalidate: () => [],
  });
  const reasons = blockers(props, props.running, chosen.size);
  const locked = !props.guard.allowed || !props.canRun;
  const toggle = (name: ScenarioName) =>
    setChosen((prev) => {
      const next = new Set(prev);
      if (next.has(name)) next.delete(name);
      else next.add(name);
      return next;
    });
  const onStart = () => {
    setError(null);
    const chosenStrategies = Object.fromEntries(Object.entries(strategies).filter(([, s]) => s !== ''));
    start.mutate({ scenarios: chosen.size === props.scenarios.length ? 'all' : [...chosen], size, strategies: chosenStrategies });
  };

  return (
    <section className={styles.section} aria-labelledby="replay-start-heading">
      <h2 id="replay-start-heading">Start a run</h2>
      <p className={styles.sectionNote}>
        Each scenario creates its own intents, tagged as replay data (hidden from the Intents page), and drives this environment’s engine. The run goes on
        in the background of the console’s server; you can leave the page and come back. A strategy chosen here applies to this run’s own calls only, so two
        strategies compare run against run before the flag is changed for everyone.
      </p>
      <fieldset disabled={locked} style={{ border: 0, padding: 0, margin: 0 }}>
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
        <RunOptions size={size} onSize={setSize} strategies={strategies} onStrategies={setStrategies} configured={props.settings.strategies} locked={locked} />
        <button type="button" className="btn btn-primary" disabled={reasons.length > 0 || start.isPending} aria-describedby={reasons.length ? 'replay-disabled-reason' : undefined} data-testid="replay-start" onClick={onStart}>
          {start.isPending ? 'Starting…' : 'Start replay'}
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

function RunOptions({ size, onSize, strategies, onStrategies, configured, locked }: { size: 'full' | 'small'; onSize: (size: 'full' | 'small') => void; strategies: StrategyChoice; onStrategies: (update: (prev: StrategyChoice) => StrategyChoice) => void; configured: Record<StrategyFlag, LockStrategy>; locked: boolean }) {
  return (
    <>
      <label className={r.scenarioOption}>
        Size
        <select value={size} onChange={(e) => onSize(e.target.value as 'full' | 'small')} disabled={locked}>
          <option value="full">full (the sizes the targets are set for)</option>
          <option value="small">small (a quick smoke run)</option>
        </select>
      </label>
      {STRATEGY_CHOICES.map(({ flag, label }) => (
        <label key={flag} className={r.scenarioOption}>
          {label}
          <select value={strategies[flag]} onChange={(e) => onStrategies((prev) => ({ ...prev, [flag]: e.target.value as '' | LockStrategy }))} disabled={locked} data-testid={`replay-strategy-${flag}`}>
            <option value="">as configured ({configured[flag]})</option>
            <option value="pessimistic">pessimistic, for this run</option>
            <option value="optimistic">optimistic, for this run</option>
            <option value="adaptive">adaptive, for this run</option>
          </select>
        </label>
      ))}
    </>
  );
}
