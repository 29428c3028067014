import Link from 'next/link';
import { AUDIT_ACTIONS, AUDIT_ACTION_NAMES } from '@/lib/audit/actions';
import styles from './audit.module.css';

/** The audit log's filters: a plain GET form, so the filters are the URL. */
export function AuditFilters({ params, actors, filtered }: { params: Record<string, string>; actors: string[]; filtered: boolean }) {
  return (
    <form className={styles.filters} method="get" action="/audit" aria-label="Audit filters">
      <label className={styles.field}>
        <span>Actor</span>
        <input name="actor" className="field" defaultValue={params.actor ?? ''} list="audit-actors" placeholder="anyone" autoComplete="off" />
        <datalist id="audit-actors">
          {actors.map((a) => (
            <option key={a} value={a} />
          ))}
        </datalist>
      </label>
      <label className={styles.field}>
        <span>Action</span>
        <select name="action" className="field" defaultValue={params.action ?? ''}>
          <option value="">any action</option>
          <optgroup label="Intents, Locks and replay">
            {AUDIT_ACTION_NAMES.filter((a) => AUDIT_ACTIONS[a].source === 'intent').map((a) => (
              <option key={a} value={a}>
                {AUDIT_ACTIONS[a].label}
              </option>
            ))}
          </optgroup>
          <optgroup label="Sign-ins, users and tokens">
            {AUDIT_ACTION_NAMES.filter((a) => AUDIT_ACTIONS[a].source === 'auth').map((a) => (
              <option key={a} value={a}>
                {AUDIT_ACTIONS[a].label}
              </option>
            ))}
          </optgroup>
        </select>
      </label>
      <label className={styles.field}>
        <span>Intent id</span>
        <input name="intent" defaultValue={params.intent ?? ''} placeholder="any intent" className="field mono" size={36} autoComplete="off" />
      </label>
      <label className={styles.field}>
        <span>From (UTC)</span>
        <input type="datetime-local" name="from" className="field" defaultValue={params.from ?? ''} />
      </label>
      <label className={styles.field}>
        <span>Until (UTC)</span>
        <input type="datetime-local" name="to" className="field" defaultValue={params.to ?? ''} />
      </label>
      <label className={styles.check}>
        <input type="checkbox" name="includeReplay" value="true" defaultChecked={params.includeReplay === 'true'} />
        <span>Include contention-replay intents</span>
      </label>
      <div className={styles.buttons}>
        <button type="submit" className="btn btn-primary">
          Apply
        </button>
        {filtered && (
          <Link href="/audit" className="btn">
            Clear
          </Link>
        )}
      </div>
    </form>
  );
}
