import styles from '@/components/locks/console.module.css';
import { operationLabel } from '@/lib/contention/series';
import type { ConcurrencySettings } from '@/lib/env';
import type { Targets } from '@/lib/replay/targets';
import r from './replay.module.css';

/** The rollout's switches in force and the targets a run is judged against. */
export function FlagsPanel({ settings, targets, targetsProblem }: { settings: ConcurrencySettings; targets: Targets | null; targetsProblem: string | null }) {
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
            // The audit log's "none" is a strategy, not a missing log: its rows are only ever inserted, so they take no row lock.
            <FlagRow key={op} name={`${operationLabel(op).toLowerCase()} strategy`} value={op === 'audit_log' ? `${s} (append-only: inserts take no row lock)` : s} />
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
        <p className={styles.sectionNote}>The product’s performance targets, unless overridden with REPLAY_TARGETS. They are set for full-size runs and not scaled down: a smaller run is a smoke run, its timing figures shown but not judged.</p>
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
              value={`a figure ${Math.round(targets.regressionTolerance * 100)} % worse than the compared run (the pinned baseline, else the previous comparable run), with enough samples in both, and outside the spread of recent runs with the same settings; throughput only when its share of the raw-SQL baseline fell too (docs/REPLAY.md)`}
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
