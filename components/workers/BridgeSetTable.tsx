import styles from '@/components/locks/console.module.css';

export type BridgeInfo = { name: string; description: string; accepts: string[] };

/** The pipeline's bridges in order: which statuses each runs on, and its contract. */
export function BridgeSetTable({ bridges }: { bridges: BridgeInfo[] }) {
  return (
    <section className={styles.section} aria-labelledby="workers-bridges">
      <h2 id="workers-bridges">The BridgeSet</h2>
      <table className={styles.table}>
        <thead>
          <tr>
            <th>bridge</th>
            <th>runs on</th>
            <th>contract</th>
          </tr>
        </thead>
        <tbody>
          {bridges.map((b) => (
            <tr key={b.name}>
              <td className={styles.mono}>{b.name}</td>
              <td>{b.accepts.join(', ')}</td>
              <td className="wrap">{b.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
