'use client';

import Link from 'next/link';
import { Fragment, useState } from 'react';
import { formatUtc } from '@/components/ui/time';
import { eventsHref } from '@/lib/console/events-url';
import { shortId } from '@/lib/console/ids';
import type { OutboxEventView } from '@/lib/events/recent';
import styles from './events.module.css';

const COLUMNS = 5;

/**
 * The events as table rows, each with a button that opens its payload in a full-width row beneath it (the JSON is
 * too wide for a cell). Several can be open at once, to compare two events.
 */
export function RecentEventRows({ items, filters }: { items: OutboxEventView[]; filters: Record<string, string> }) {
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((was) => {
      const next = new Set(was);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  return (
    <div className={styles.scroll}>
      <table className={styles.table} aria-label="Recent events">
        <thead>
          <tr>
            <th scope="col">Written (UTC)</th>
            <th scope="col">Type</th>
            <th scope="col">Intent or key</th>
            <th scope="col">State</th>
            <th scope="col">
              <span className="visually-hidden">Payload</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {items.map((e) => (
            <Fragment key={e.id}>
              <EventRow event={e} filters={filters} open={open.has(e.id)} onToggle={() => toggle(e.id)} />
              <tr id={`event-payload-${e.id}`} className={styles.payloadRow} hidden={!open.has(e.id)}>
                <td colSpan={COLUMNS}>
                  <figure className={styles.payloadFigure}>
                    <figcaption className="visually-hidden">Payload of event {e.id}</figcaption>
                    {/* Focusable, so that a keyboard scrolls a long payload too. */}
                    <pre className={styles.payload} tabIndex={0}>
                      {JSON.stringify(e.payload, null, 2)}
                    </pre>
                  </figure>
                </td>
              </tr>
            </Fragment>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function EventRow({ event: e, filters, open, onToggle }: { event: OutboxEventView; filters: Record<string, string>; open: boolean; onToggle: () => void }) {
  return (
    <tr data-testid="event-row" data-type={e.type} data-state={e.publishedAt ? 'published' : 'waiting'}>
      <td className={styles.nowrap}>{formatUtc(e.createdAt).replace(' UTC', '')}</td>
      <td className={styles.nowrap}>
        <Link href={eventsHref({ ...filters, type: e.type })} className="mono" title="Only events of this type">
          {e.type}
        </Link>
      </td>
      <td className={styles.nowrap}>
        {e.intentId ? (
          <Link href={`/intents/${e.intentId}`} className="mono" title={`Intent ${e.intentId}`}>
            {shortId(e.intentId)}
          </Link>
        ) : (
          <span className={`mono ${styles.key}`} title="The lock’s resource: its events stay in order">
            {e.orderingKey}
          </span>
        )}
      </td>
      <td className={styles.nowrap}>
        {e.publishedAt ? (
          <>
            <span className={`${styles.badge} ${styles.published}`}>published</span>{' '}
            <span className={styles.subtle} title={`Acknowledged by JetStream at ${formatUtc(e.publishedAt)}`}>
              seq {e.streamSeq ?? '—'}
            </span>
          </>
        ) : (
          <span className={`${styles.badge} ${styles.waiting}`} title="In the outbox, not yet acknowledged by JetStream">
            waiting
          </span>
        )}
      </td>
      <td className={styles.nowrap}>
        <button type="button" className="btn btn-sm" aria-expanded={open} aria-controls={`event-payload-${e.id}`} onClick={onToggle}>
          {open ? 'Hide payload' : 'Payload'}
          <span className="visually-hidden"> of event {e.id}</span>
        </button>
      </td>
    </tr>
  );
}
