import styles from '@/components/locks/console.module.css';
import { formatUtc } from '@/components/ui/time';
import type { WorkersOverview } from '@/lib/workers/queries';

const ago = (ms: number) => (ms < 1000 ? 'just now' : ms < 60_000 ? `${Math.round(ms / 1000)} s ago` : `${Math.round(ms / 60_000)} min ago`);

function WorkerState({ state }: { state: WorkersOverview['workers'][number]['state'] }) {
  const cls = state === 'running' ? styles.badgeOk : state === 'lost' ? styles.badgeRoot : state === 'stopping' ? styles.badgeWait : '';
  return <span className={`${styles.badge} ${cls}`}>{state}</span>;
}

/** The registered worker processes: state, last heartbeat, claims against concurrency, where they run. */
export function WorkersTable({ data }: { data: WorkersOverview }) {
  return (
    <section className={styles.section} aria-labelledby="workers-list">
      <h2 id="workers-list">Workers</h2>
      <p className={styles.sectionNote}>Every worker process registers itself and heartbeats; one that stops heartbeating is shown as lost and its claims are rescued.</p>
      {data.workers.length === 0 ? (
        <div className={styles.empty}>No worker has registered. Start one with `npm run worker` (npm start runs one in development).</div>
      ) : (
        <div className={styles.scroll}>
          <table className={styles.table}>
            <thead>
              <tr>
                <th>worker</th>
                <th>state</th>
                <th>heartbeat</th>
                <th>claims / concurrency</th>
                <th>host, pid</th>
                <th>started</th>
              </tr>
            </thead>
            <tbody>
              {data.workers.map((w) => (
                <tr key={w.id}>
                  <td className={styles.mono}>{w.name}</td>
                  <td>
                    <WorkerState state={w.state} />
                  </td>
                  <td className="nowrap" title={formatUtc(w.heartbeatAt)}>
                    {ago(w.heartbeatAgeMs)}
                  </td>
                  <td>
                    {w.state === 'stopped' ? '—' : `${w.inFlight} / ${w.concurrency}`}
                  </td>
                  <td className={styles.mono}>
                    {w.host}, {w.pid}
                  </td>
                  <td className="nowrap">{formatUtc(w.startedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
