import styles from '@/components/locks/console.module.css';
import { operationLabel } from '@/lib/contention/series';
import type { RunSummary } from '@/lib/replay/summary';
import { VerdictBadge, when } from './format';
import r from './replay.module.css';

/** Every replay run on this database, newest first: who, from where, with which flags, and how it ended; one opens on click. */
export function RunsTable({ runs, shownId, onSelect }: { runs: RunSummary[]; shownId: string | null; onSelect: (id: string) => void }) {
  return (
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
          {runs.map((x) => (
            <tr key={x.id} className={x.id === shownId ? r.selected : undefined}>
              <td>
                <button type="button" className="btn btn-ghost btn-sm" onClick={() => onSelect(x.id)} aria-current={x.id === shownId ? 'true' : undefined}>
                  {when(x.createdAt)}
                </button>
                {x.pinned && <span className={r.baselineTag}>baseline</span>}
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
                {x.scenarios.filter((s) => s.verdict === 'pass').length}/{x.scenarios.length} pass
                {x.scenarios.some((s) => s.verdict === 'smoke') ? `, ${x.scenarios.filter((s) => s.verdict === 'smoke').length} smoke` : ''}
                {x.sizePreset !== 'full' ? ` (${x.sizePreset})` : ''}
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
  );
}
