import { diffLines, type DiffLine, type JsonRecord } from '@/lib/console/json-diff';
import type { ChangesSince } from '@/lib/intents/changes-since';
import { DiffView } from '../DiffView';
import { JsonView } from '../JsonView';
import { HistoryHead } from '../HistoryHead';
import styles from '../intents.module.css';
import type { Submission } from './types';

/** The conflict side by side: the reviewer's edit, the intent as it is now (with what re-applying would change), and what got in first. */
export function ConflictColumns({ submission, base, changes, reapplyLines, theirLines, edited }: { submission: Submission; base: JsonRecord; changes: ChangesSince; reapplyLines: DiffLine[]; theirLines: DiffLine[][]; edited: boolean }) {
  const current = changes.intent;
  return (
    <div className={styles.threeWayCols}>
      <section className={styles.threeWayCol} aria-label="Your edit">
        <h3>Your edit (on version {submission.expectedVersion})</h3>
        <DiffView lines={diffLines(base, submission.diff)} label="Your edit as a diff" />
        <p className="muted" style={{ marginTop: '0.4rem' }}>
          Why: {submission.reason} · via {submission.source}
        </p>
      </section>
      <section className={styles.threeWayCol} aria-label="The intent now">
        <h3>
          The intent now (version {current.version}, {current.status})
        </h3>
        <JsonView value={current.payload} label="Current payload" />
        <p className="muted" style={{ margin: '0.5rem 0 0.2rem' }}>
          {edited ? 'Re-applying your reworked edit here would change:' : 'Re-applying your edit here would change:'}
        </p>
        <DiffView lines={reapplyLines} label="Your edit on the current version" />
      </section>
      <section className={styles.threeWayCol} aria-label="Changes since your version">
        <h3>Changed since version {submission.expectedVersion}</h3>
        <ChangesSinceList changes={changes} theirLines={theirLines} />
      </section>
    </div>
  );
}

/** Who changed the intent since the reviewer's version, and how: corrections with their diffs, then status moves. */
function ChangesSinceList({ changes, theirLines }: { changes: ChangesSince; theirLines: DiffLine[][] }) {
  const statusEvents = changes.events.filter((e) => e.action !== 'correction');
  return (
    <ul className={styles.history}>
      {changes.corrections.map((c, i) => (
        <li key={c.id} className={styles.historyItem} data-testid="change-since">
          <HistoryHead actor={c.actor} at={c.createdAt}>
            <span className="muted">
              v{c.versionBefore} → v{c.versionAfter}
            </span>
          </HistoryHead>
          <p className={styles.reason}>
            <span className="muted">Why: </span>
            {c.reason}
          </p>
          <DiffView lines={theirLines[i]} label={`Change by ${c.actor}`} />
        </li>
      ))}
      {statusEvents.map((e) => (
        <li key={e.id} className={styles.historyItem} data-testid="change-since">
          <HistoryHead actor={e.actor} at={e.at}>
            <span className="muted">
              {e.fromStatus} → {e.toStatus} (v{e.versionBefore} → v{e.versionAfter})
            </span>
          </HistoryHead>
        </li>
      ))}
    </ul>
  );
}
