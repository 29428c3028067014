'use client';

import { useQuery } from '@tanstack/react-query';
import { ErrorState } from '@/components/ui/ErrorState';
import { PageHeader, Panel } from '@/components/ui/PageHeader';
import { formatUtc } from '@/components/ui/time';
import type { OutboxStatus } from '@/lib/events/status';

const eventKeys = { status: ['console', 'events', 'status'] as const };

async function fetchOutboxStatus(): Promise<OutboxStatus> {
  const res = await fetch('/api/console/events', { headers: { accept: 'application/json' }, cache: 'no-store' });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
    throw new Error(body?.error?.message ?? `The server answered ${res.status}.`);
  }
  return (await res.json()) as OutboxStatus;
}

/** "1.2 s", "3 min": how far behind the relays are. */
export function formatLag(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** Events out: the outbox relay's backlog and lag, and which relays own which partitions. Polled every 2 s. */
export function EventsView() {
  const query = useQuery({ queryKey: eventKeys.status, queryFn: fetchOutboxStatus, refetchInterval: 2_000 });
  const s = query.data;
  return (
    <>
      <PageHeader
        title="Events"
        description={
          <>
            Changes other services care about leave through the transactional outbox to NATS JetStream (stream <code>BRIDGE_EVENTS</code>, subjects{' '}
            <code>evt.intent.*</code>, <code>evt.lock.*</code>). Payloads: <a href="/api-docs">API</a> (<code>x-events</code>) and docs/EVENTS.md.
          </>
        }
      />
      {query.error && <ErrorState title="Could not read the outbox" error={query.error} onRetry={() => void query.refetch()} />}
      {s && (
        <>
          <Panel title="Relay" id="relay">
            <dl aria-label="Outbox relay">
              <dt>Backlog</dt>
              <dd data-testid="outbox-backlog">{s.backlog.toLocaleString('en')} event{s.backlog === 1 ? '' : 's'} waiting</dd>
              <dt>Lag</dt>
              <dd data-testid="outbox-lag">{s.backlog ? `${formatLag(s.lagMs)} (oldest waiting since ${formatUtc(s.oldestUnpublishedAt!)})` : 'none: everything committed is published'}</dd>
              <dt>Published in the last minute</dt>
              <dd>{s.publishedLastMinute.toLocaleString('en')}</dd>
              <dt>Last published</dt>
              <dd>{s.lastPublishedAt ? formatUtc(s.lastPublishedAt) : '—'}</dd>
              <dt>Relays connected</dt>
              <dd data-testid="outbox-relays">
                {s.relays.length
                  ? `${s.relays.length}, sharing ${s.partitions} partitions`
                  : s.relayConfigured
                    ? 'none yet (starting, or NATS unreachable)'
                    : 'none: the relay is off (NATS_URL is not set); events wait in the outbox'}
              </dd>
            </dl>
          </Panel>
          {s.relays.length > 0 && (
            <Panel title="Relays" id="relays">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Backend pid</th>
                    <th scope="col">Since</th>
                    <th scope="col">Client</th>
                    <th scope="col">Partitions</th>
                  </tr>
                </thead>
                <tbody>
                  {s.relays.map((r) => (
                    <tr key={r.pid}>
                      <td>{r.pid}</td>
                      <td>{r.startedAt ? formatUtc(r.startedAt) : '—'}</td>
                      <td>{r.clientAddr ?? 'local'}</td>
                      <td>{r.partitions.length ? r.partitions.join(', ') : '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </Panel>
          )}
        </>
      )}
    </>
  );
}
