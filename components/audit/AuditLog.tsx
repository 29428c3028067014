import Link from 'next/link';
import { PageHeader } from '@/components/ui/PageHeader';
import { knownActors, listAudit, type AuditPage } from '@/lib/audit/log';
import { AUDIT_FILTER_KEYS, auditHref } from '@/lib/audit/url';
import { DomainError } from '@/lib/shared/errors';
import { AuditFilters } from './AuditFilters';
import { AuditRow } from './AuditRow';
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
  const filtered = AUDIT_FILTER_KEYS.some((k) => params[k]);
  return (
    <div>
      <PageHeader
        title="Audit"
        description="Every action, newest first: status changes, bulk batches, corrections, pipeline runs and their steps, Locks actions, replay runs and baselines, sign-ins, user and token changes. Times are UTC. The filters live in the URL: copy it to share this view."
      />
      <AuditFilters params={params} actors={actors} filtered={filtered} />
      {problem && (
        <p className={styles.alert} role="alert">
          {problem} Change the filter and apply again.
        </p>
      )}
      {page && <AuditEntries page={page} params={params} filtered={filtered} />}
    </div>
  );
}

function AuditEntries({ page, params, filtered }: { page: AuditPage; params: Record<string, string>; filtered: boolean }) {
  const { cursor: _cursor, ...filters } = params;
  return (
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
              {page.items.map((e) => (
                <AuditRow key={e.key} entry={e} filters={filters} />
              ))}
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
  );
}
