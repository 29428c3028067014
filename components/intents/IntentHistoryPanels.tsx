'use client';

import { useQuery } from '@tanstack/react-query';
import { Panel } from '@/components/ui/PageHeader';
import { ErrorState } from '@/components/ui/ErrorState';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { Skeleton } from '@/components/ui/Skeleton';
import { fetchIntentAudit, fetchIntentConflicts } from '@/lib/console/intents-client';
import { intentKeys } from '@/lib/intents/keys';
import type { AuditEvent } from '@/lib/intents/types';
import styles from './intents.module.css';

function describe(e: AuditEvent): string {
  const details = (e.details ?? {}) as Record<string, unknown>;
  switch (e.action) {
    case 'created':
      return `Created as ${e.toStatus}${typeof details.source === 'string' ? ` from ${details.source}` : ''}`;
    case 'status_change':
      return `${e.fromStatus} → ${e.toStatus}`;
    case 'bulk_status_change':
      return `${e.fromStatus} → ${e.toStatus} (bulk)`;
    case 'correction':
      return `Corrected${typeof details.reason === 'string' ? `: “${details.reason}”` : ''}${e.fromStatus !== e.toStatus ? ` (${e.fromStatus} → ${e.toStatus})` : ''}`;
    default:
      return `${e.action}${e.toStatus ? ` → ${e.toStatus}` : ''}`;
  }
}

/** Everything that happened to the intent, newest first, from the append-only audit log. */
export function AuditPanel({ id }: { id: string }) {
  const audit = useQuery({ queryKey: intentKeys.audit(id), queryFn: () => fetchIntentAudit(id) });
  return (
    <Panel title={`Audit timeline${audit.data ? ` (${audit.data.length})` : ''}`} id="audit">
      {audit.isPending ? (
        <Skeleton label="Loading the audit timeline" lines={5} />
      ) : audit.isError ? (
        <ErrorState title="The audit timeline could not be loaded" error={audit.error} onRetry={() => void audit.refetch()} retrying={audit.isFetching} />
      ) : (
        <ol className={styles.timeline} aria-label="Audit events, newest first">
          {[...audit.data].reverse().map((e) => (
            <li key={e.id} className={styles.timelineItem} data-testid="audit-event" data-action={e.action}>
              <div>{describe(e)}</div>
              {e.action !== 'correction' && typeof (e.details as { reason?: unknown } | null)?.reason === 'string' && (
                <div className={styles.timelineReason}>
                  <span className="muted">Why: </span>
                  {(e.details as { reason: string }).reason}
                </div>
              )}
              <div className={styles.timelineMeta}>
                {e.actor} · <RelativeTime iso={e.at} />
                {e.versionAfter !== null && (e.versionBefore === null ? ` · v${e.versionAfter}` : ` · v${e.versionBefore} → v${e.versionAfter}`)}
              </div>
            </li>
          ))}
        </ol>
      )}
    </Panel>
  );
}

/** Refused commands: someone acted on a version that had moved on. */
export function ConflictsPanel({ id }: { id: string }) {
  const conflicts = useQuery({ queryKey: intentKeys.conflicts(id), queryFn: () => fetchIntentConflicts(id) });
  return (
    <Panel title={`Conflict events${conflicts.data ? ` (${conflicts.data.length})` : ''}`} id="conflicts">
      {conflicts.isPending ? (
        <Skeleton label="Loading conflict events" lines={2} />
      ) : conflicts.isError ? (
        <ErrorState title="Conflict events could not be loaded" error={conflicts.error} onRetry={() => void conflicts.refetch()} retrying={conflicts.isFetching} />
      ) : conflicts.data.length === 0 ? (
        <p className="muted">None: nobody has acted on an outdated version of this intent.</p>
      ) : (
        <table className={styles.conflictTable}>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">Operation</th>
              <th scope="col">Expected → actual</th>
            </tr>
          </thead>
          <tbody>
            {[...conflicts.data].reverse().map((c) => (
              <tr key={c.id} data-testid="conflict-event" title={c.reason}>
                <td>
                  <RelativeTime iso={c.at} />
                </td>
                <td>{c.actor}</td>
                <td>{c.operation}</td>
                <td>
                  v{c.expectedVersion} → v{c.currentVersion}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Panel>
  );
}
