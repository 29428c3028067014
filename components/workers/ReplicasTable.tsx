import styles from '@/components/locks/console.module.css';
import { formatUtc } from '@/components/ui/time';
import type { WorkersOverview } from '@/lib/workers/queries';

const bytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} kB` : `${(n / 1024 ** 2).toFixed(1)} MB`);
const millis = (ms: number) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

/**
 * The read replicas serving the console's reads, as this instance's monitor sees them: lag in time and in WAL, and
 * whether each is in rotation. Shown only when replicas are configured; without them the section does not exist.
 */
export function ReplicasTable({ data }: { data: WorkersOverview }) {
  if (!data.replicas?.length) return null;
  return (
    <section className={styles.section} aria-labelledby="replicas-heading">
      <h2 id="replicas-heading">Read replicas</h2>
      <p className={styles.sectionNote}>
        Lists, counts, search and these overviews are read from a replica that has replayed the reader’s last command; one too far behind leaves the rotation until it catches up, and its reads go to the primary.
      </p>
      <div className={styles.scroll}>
        <table className={styles.table}>
          <thead>
            <tr>
              <th>replica</th>
              <th>rotation</th>
              <th>lag</th>
              <th>WAL behind</th>
              <th>replayed up to</th>
              <th>checked</th>
            </tr>
          </thead>
          <tbody>
            {data.replicas.map((r) => (
              <tr key={r.name}>
                <td className={styles.mono}>
                  {r.name} <span className="muted">{r.host}</span>
                </td>
                <td title={r.problem ?? undefined}>
                  <span className={`${styles.badge} ${r.inRotation ? styles.badgeOk : styles.badgeRoot}`}>{r.inRotation ? 'in rotation' : 'out'}</span>
                  {r.problem && <div className={styles.sectionNote}>{r.problem}</div>}
                </td>
                <td className="nowrap">{r.lagMs === null ? '—' : millis(r.lagMs)}</td>
                <td className="nowrap">{r.lagBytes === null ? '—' : bytes(r.lagBytes)}</td>
                <td className={styles.mono}>{r.replayLsn ?? '—'}</td>
                <td className="nowrap">{r.checkedAt ? formatUtc(r.checkedAt) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
