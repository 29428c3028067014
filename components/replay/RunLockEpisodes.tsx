import styles from '@/components/locks/console.module.css';
import { operationLabel } from '@/lib/contention/series';
import { formatDuration } from '@/lib/locks/format';
import type { RunLockEpisodes } from '@/lib/replay/episodes';
import { when } from './format';

/**
 * The blockings the run caused, as the lock history recorded them (episodes begun while it ran that involve its own
 * intents), each opening on the Locks page. Lock waits too short for the sampler to see are counted in the
 * scenarios' outcomes above, not here.
 */
export function RunLockEpisodesSection({ episodes, running }: { episodes: RunLockEpisodes; running: boolean }) {
  return (
    <section style={{ marginTop: '0.75rem' }} data-testid="run-lock-episodes" aria-labelledby="run-lock-episodes-title">
      <h3 id="run-lock-episodes-title" style={{ margin: '0 0 0.35rem' }}>
        Lock episodes it caused{running ? ' so far' : ''}: {episodes.total}
      </h3>
      {episodes.total === 0 ? (
        <p className={styles.hint}>
          The lock history recorded no blocking of this run’s intents. It samples once a second while anything waits, so blockings shorter than that may
          pass unrecorded; their waits are in the scenarios’ outcomes above.
        </p>
      ) : (
        <div className={styles.scroll}>
          <table className={styles.table}>
            <thead>
              <tr>
                <th>started</th>
                <th>lasted</th>
                <th>root blocker</th>
                <th>waiters (peak · seen)</th>
                <th>the run’s intents</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              {episodes.items.map((e) => (
                <tr key={e.id} data-testid={`run-episode-${e.id}`}>
                  <td className={styles.nowrap}>{when(e.startedAt)}</td>
                  <td className={styles.nowrap}>{e.endedAt ? formatDuration(e.durationMs) : `${formatDuration(e.durationMs)}, going on`}</td>
                  <td>
                    <span className={styles.mono}>pid {e.rootPid}</span>{' '}
                    <span className={styles.hint}>{e.rootOperation ? operationLabel(e.rootOperation).toLowerCase() : e.rootApplication || '(no application name)'}</span>
                  </td>
                  <td>
                    {e.peakWaiters} · {e.waitersSeen}
                  </td>
                  <td>
                    {e.intentIds.map((id) => (
                      <a key={id} href={`/intents/${id}`} className={styles.mono} style={{ marginRight: 6 }}>
                        {id.slice(0, 8)}
                      </a>
                    ))}
                  </td>
                  <td>
                    <a href={`/locks?episode=${e.id}`}>Open on Locks →</a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {episodes.total > episodes.items.length && <p className={styles.hint}>The first {episodes.items.length} of {episodes.total}, by start.</p>}
        </div>
      )}
      {episodes.stormMinutes.length > 0 && (
        <p className={styles.hint}>
          In {episodes.stormMinutes.length === 1 ? 'one minute' : `${episodes.stormMinutes.length} minutes`} of the run the lock history summarised a storm of{' '}
          {episodes.stormMinutes.reduce((n, m) => n + m.episodes, 0)} blockings instead of recording each; those are tied to no intent, may include other traffic,
          and are not counted above.
        </p>
      )}
    </section>
  );
}
