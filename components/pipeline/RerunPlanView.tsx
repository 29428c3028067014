import styles from '@/components/locks/console.module.css';
import { formatUtc } from '@/components/ui/time';
import { shortId } from '@/lib/console/ids';
import type { RerunPlan, RerunStepPlan } from '@/lib/pipeline/rerun';
import own from './rerun.module.css';

/**
 * A rerun's plan in words: the run whose steps are reused, the status moves before the first bridge, then each
 * bridge — reused (with what was recorded) or run again (with what it may change, as the bridge declares it).
 */
export function RerunPlanView({ plan }: { plan: RerunPlan }) {
  const path = [plan.moves[0]?.[0], ...plan.moves.map(([, to]) => to)].filter(Boolean).join(' → ');
  return (
    <div data-testid="rerun-plan">
      <p>
        {plan.basedOn ? (
          <>
            Reuses run {shortId(plan.basedOn.runId)} (round {plan.basedOn.round}, {plan.basedOn.status.replace(/_/g, ' ')}, {formatUtc(plan.basedOn.startedAt)}).{' '}
          </>
        ) : (
          'The pipeline has not run on this intent: nothing is reused. '
        )}
        Runs as round {plan.round}, on the payload as it is now (version {plan.intent.version}).
      </p>
      <p>
        First the status moves <span className={own.moves}>{path}</span>, each audited with your reason and sent out as <span className={own.moves}>evt.intent.status_changed</span>.
      </p>
      <table className={styles.table}>
        <thead>
          <tr>
            <th>bridge</th>
            <th>in this rerun</th>
            <th>recorded result / may change</th>
          </tr>
        </thead>
        <tbody>
          {plan.steps.map((s) => (
            <tr key={s.bridge} data-testid={`rerun-step-${s.bridge}`}>
              <td className={styles.mono}>{s.bridge}</td>
              <td>
                <span className={`${styles.badge} ${s.action === 'reuse' ? styles.badgeOk : styles.badgeWait}`}>{s.action === 'reuse' ? 'reused' : 'runs again'}</span>
              </td>
              <td className="wrap">
                <StepEffect step={s} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className={styles.hint}>The run’s end is sent out as evt.intent.pipeline_finished.</p>
    </div>
  );
}

function StepEffect({ step }: { step: RerunStepPlan }) {
  if (step.action === 'reuse') {
    const recorded = step.recorded;
    if (!recorded || recorded.status === 'skipped') return <>skipped in that run; skipped again, changes nothing</>;
    return (
      <>
        not run; its recorded result is kept: <span className={own.result}>{JSON.stringify(recorded.result ?? null)}</span>
      </>
    );
  }
  if (!step.mayChange) return <>declares no effects: may change anything the engine’s commands allow</>;
  const { moves, correction, events } = step.mayChange;
  const parts = [
    moves.length ? `status ${moves.map(([a, b]) => `${a} → ${b}`).join(' or ')}` : 'no status move',
    correction ? `correction: ${correction}` : 'no correction',
    events.length ? `sends ${events.join(', ')}` : 'sends nothing',
  ];
  return <>may change: {parts.join('; ')}</>;
}
