import Link from 'next/link';
import { Panel } from '@/components/ui/PageHeader';
import { eventsHref } from '@/lib/console/events-url';
import { listRecentEvents, type RecentEventsPage } from '@/lib/events/recent';
import { DomainError } from '@/lib/shared/errors';
import { RecentEventFilters } from './RecentEventFilters';
import { RecentEventRows } from './RecentEventRows';
import styles from './events.module.css';

/** Events shown per page: a screenful, the rest a click on "Older" away. */
const PAGE_SIZE = 25;

/**
 * The outbox's events, newest first, filtered by type and by published or waiting: a plain GET form, so the filters
 * are the URL; keyset pages continue with "Older". Read on the server with the same function as the JSON API's
 * GET /api/console/events/recent.
 */
export async function RecentEvents({ params }: { params: Record<string, string> }) {
  let page: RecentEventsPage | null = null;
  let problem: string | null = null;
  try {
    page = await listRecentEvents({ ...params, limit: PAGE_SIZE });
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    problem = err.message;
  }
  const filtered = Boolean(params.type || params.state || params.intent);
  return (
    <Panel id="recent-events" title="Recent events">
      <p className={styles.note}>
        Newest first, as written to the outbox in the transaction of each change. A published event was acknowledged by JetStream (with its
        stream sequence); a waiting one is still in the outbox. The payload is the message other services receive. Times are UTC.
      </p>
      <RecentEventFilters params={params} filtered={filtered} />
      {problem && (
        <p className={styles.alert} role="alert">
          {problem} Change the filter and apply again.
        </p>
      )}
      {page && <RecentEventsTable page={page} params={params} filtered={filtered} />}
    </Panel>
  );
}

function RecentEventsTable({ page, params, filtered }: { page: RecentEventsPage; params: Record<string, string>; filtered: boolean }) {
  const { cursor: _cursor, ...filters } = params;
  return (
    <>
      {page.items.length === 0 ? (
        <p className={styles.empty}>{filtered || params.cursor ? 'No events match these filters.' : 'No events in the outbox yet.'}</p>
      ) : (
        <RecentEventRows items={page.items} filters={filters} />
      )}
      <nav className={styles.pager} aria-label="Event pages">
        {params.cursor && (
          <Link href={eventsHref(filters)} className="btn btn-sm">
            ← Newest
          </Link>
        )}
        {page.nextCursor && (
          <Link href={eventsHref({ ...filters, cursor: page.nextCursor })} className="btn btn-sm" rel="next">
            Older →
          </Link>
        )}
      </nav>
    </>
  );
}
