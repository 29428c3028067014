import Link from 'next/link';
import { PageHeader } from '@/components/ui/PageHeader';
import { formatUtc } from '@/components/ui/time';
import { AUDIT_ACTIONS, AUDIT_ACTION_NAMES } from '@/lib/audit/actions';
import { describeAudit } from '@/lib/audit/describe';
import { knownActors, listAudit, type AuditPage } from '@/lib/audit/log';
import { auditHref } from '@/lib/audit/url';
import { DomainError } from '@/lib/shared/errors';
import styles from './audit.module.css';

/**
 * The global audit log: every recorded action, newest first, filtered by actor, action, intent and time. A plain
 * GET form, so the filters are the URL (copy it to share the view); keyset pages continue with "Older".
 */
export async function AuditLog({ params }: { params: Record<string, string> }) {
  let page: AuditPage | null = null;
  let problem: string | null = null;
  try {
    page = await listAudit({ ...params, limit: 50 });
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    problem = err.message;
  }
  const actors = await knownActors();
  const filtered = ['actor', 'action', 'intent', 'from', 'to'].some((k) => params[k]);
  const { cursor: _cursor, ...filters } = params;
  return (
    <div>
      <PageHeader
        title="Audit"
        description="Every action, newest first: status changes, bulk batches, corrections, pipeline runs and their steps, Locks actions, sign-ins, user and token changes. Times are UTC. The filters live in the URL: copy it to share this view."
      />
      <form className={styles.filters} method="get" action="/audit" aria-label="Audit filters">
        <label className={styles.field}>
          <span>Actor</span>
          <input name="actor" defaultValue={params.actor ?? ''} list="audit-actors" placeholder="anyone" autoComplete="off" />
          <datalist id="audit-actors">
            {actors.map((a) => (
              <option key={a} value={a} />
            ))}
          </datalist>
        </label>
        <label className={styles.field}>
          <span>Action</span>
          <select name="action" defaultValue={params.action ?? ''}>
            <option value="">any action</option>
            <optgroup label="Intents and Locks">
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
          <input name="intent" defaultValue={params.intent ?? ''} placeholder="any intent" className="mono" size={36} autoComplete="off" />
        </label>
        <label className={styles.field}>
          <span>From (UTC)</span>
          <input type="datetime-local" name="from" defaultValue={params.from ?? ''} />
        </label>
        <label className={styles.field}>
          <span>Until (UTC)</span>
          <input type="datetime-local" name="to" defaultValue={params.to ?? ''} />
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
      {problem && (
        <p className={styles.alert} role="alert">
          {problem} Change the filter and apply again.
        </p>
      )}
      {page && (
        <section className={styles.panel} aria-label="Audit entries">
          {page.items.length === 0 ? (
            <p className={styles.empty}>{filtered || params.cursor ? 'Nothing matches these filters.' : 'Nothing has been recorded yet.'}</p>
          ) : (
            <div className={styles.scroll}>
              <table className={styles.table}>
                <thead>
                  <tr>
                    <th scope="col">When (UTC)</th>
                    <th scope="col">Who</th>
                    <th scope="col">Action</th>
                    <th scope="col">What</th>
                    <th scope="col">Intent</th>
                    <th scope="col">Reason</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((e) => {
                    const line = describeAudit(e);
                    return (
                      <tr key={e.key} data-testid="audit-row" data-action={e.action}>
                        <td className={styles.nowrap}>{formatUtc(e.at).replace(' UTC', '')}</td>
                        <td className={styles.nowrap}>
                          <Link href={auditHref({ ...filters, actor: e.actor })} title={`Only ${e.actor}'s actions`}>
                            {e.actor}
                          </Link>
                        </td>
                        <td className={styles.nowrap}>
                          <Link href={auditHref({ ...filters, action: e.action })} title="Only this action">
                            {line.label}
                          </Link>
                        </td>
                        <td>{line.what}</td>
                        <td className={styles.nowrap}>
                          {e.intentId ? (
                            <>
                              <Link href={`/intents/${e.intentId}`} className="mono">
                                {e.intentId.slice(0, 8)}
                              </Link>{' '}
                              <Link href={auditHref({ ...filters, intent: e.intentId })} className={styles.subtle} title="Only this intent's entries">
                                filter
                              </Link>
                            </>
                          ) : (
                            <span className={styles.subtle}>—</span>
                          )}
                        </td>
                        <td className={styles.reason}>{line.reason ?? <span className={styles.subtle}>—</span>}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
          <nav className={styles.pager} aria-label="Audit pages">
            {params.cursor && (
              <Link href={auditHref(filters)} className="btn btn-sm">
                ← Newest
              </Link>
            )}
            {page.nextCursor && (
              <Link href={auditHref({ ...filters, cursor: page.nextCursor })} className="btn btn-sm" rel="next">
                Older →
              </Link>
            )}
          </nav>
        </section>
      )}
    </div>
  );
}
