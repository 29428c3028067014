'use client';

import { useQuery } from '@tanstack/react-query';
import { Panel } from '@/components/ui/PageHeader';
import { ErrorState } from '@/components/ui/ErrorState';
import { RelativeTime } from '@/components/ui/RelativeTime';
import { Skeleton } from '@/components/ui/Skeleton';
import { fetchIntentConflicts } from '@/lib/console/intents-client';
import { operationLabel } from '@/lib/contention/series';
import { intentKeys } from '@/lib/intents/keys';
import styles from './intents.module.css';

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
                <td>{operationLabel(c.operation)}</td>
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
