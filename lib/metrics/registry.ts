import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import { db } from '@/lib/db/client';
import { LOCK_WAIT_BOUNDS_MS } from '@/lib/contention/series';
import { leaseEventTotals } from '@/lib/leases/events';
import { openStreamCount } from '@/lib/live/stream';
import { readWorkerMetrics, registerWorkerMetrics, type WorkerMetrics } from '@/lib/workers/metrics';
import { EPISODE_DURATION_BOUNDS_MS } from '@/lib/locks/history/fold';
import {
  selectActiveLocks,
  selectDeadlockTotals,
  selectLockEpisodeTotals,
  selectLockWaitTotals,
  selectOutcomeTotals,
  type LockEpisodeTotals,
  type LockWaitTotal,
  type OutcomeTotal,
} from './queries';

/**
 * The Prometheus exposition. The bridge_* metrics are built at scrape time from what is persisted
 * in Postgres, not from this process's memory, so every console instance behind a load balancer exports the same
 * totals (a per-process counter would restart at zero with each instance and double-count across them). Process
 * metrics (collectDefaultMetrics) are this instance's own, as they should be.
 *
 * Label `lock_type` is the operation that took the row lock (update_status, bulk_update_status, reevaluate,
 * pipeline_execute, …): each operation takes one kind of lock, and the operation is what an on-call engineer acts on.
 */

/** A lock acquisition slower than the uncontended target (target: p95 < 5 ms, docs/REPLAY.md) had to wait for someone: a contention. */
export const CONTENTION_THRESHOLD_MS = 5;

const globalForMetrics = globalThis as unknown as { bridgeProcessRegistry?: Registry };

function processRegistry(): Registry {
  if (!globalForMetrics.bridgeProcessRegistry) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    // Open server-sent event streams of this process: a leak (a stream nobody reads) shows here first.
    new Gauge({
      name: 'bridge_live_streams_open',
      help: 'Server-sent event streams open in this console process',
      registers: [registry],
      collect() {
        this.set(openStreamCount());
      },
    });
    globalForMetrics.bridgeProcessRegistry = registry;
  }
  return globalForMetrics.bridgeProcessRegistry;
}

export type PersistedMetrics = {
  outcomes: OutcomeTotal[];
  lockWaits: LockWaitTotal[];
  deadlocks: { detections: number; retries: number };
  activeLocks: { lockType: string; n: number }[];
  leaseEvents?: { backend: string; event: string; n: number }[];
  /** Claims, completions, failures, rescues and queue depth of the workers (lib/workers/metrics.ts). */
  workers?: WorkerMetrics;
  /** The lock history's episodes (lib/locks/history). */
  lockEpisodes?: LockEpisodeTotals;
};

/** One consistent read of everything, under short timeouts: a struggling database must not pile up scrapes. */
export async function readPersistedMetrics(): Promise<PersistedMetrics> {
  return db().$transaction(
    async (tx) => {
      await tx.$executeRaw`SELECT set_config('statement_timeout', '3000ms', true), set_config('lock_timeout', '500ms', true)`;
      return {
        outcomes: await selectOutcomeTotals(tx),
        lockWaits: await selectLockWaitTotals(tx),
        deadlocks: await selectDeadlockTotals(tx),
        activeLocks: await selectActiveLocks(tx),
        leaseEvents: await leaseEventTotals(tx),
        workers: await readWorkerMetrics(tx),
        lockEpisodes: await selectLockEpisodeTotals(tx),
      };
    },
    { isolationLevel: 'RepeatableRead', maxWait: 3000, timeout: 10_000 },
  );
}

const sumBy = <T>(rows: T[], key: (r: T) => string, value: (r: T) => number) => {
  const out = new Map<string, number>();
  for (const r of rows) out.set(key(r), (out.get(key(r)) ?? 0) + value(r));
  return out;
};

type HistogramSeries = { labels: Record<string, string>; bucketsMs: { leMs: number; n: number }[]; sumMs: number };

/**
 * prom-client's Histogram only observes samples; ours are persisted bucket counts (each row counted in the first
 * bucket whose bound holds it; -1 beyond the last), so it is exposed as computed, in seconds.
 */
function persistedHistogram(name: string, help: string, boundsMs: readonly number[], series: HistogramSeries[]): Metric<string> {
  const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
  for (const s of series) {
    let cumulative = 0;
    for (const bound of boundsMs) {
      cumulative += s.bucketsMs.filter((r) => r.leMs === bound).reduce((n, r) => n + r.n, 0);
      values.push({ metricName: `${name}_bucket`, labels: { le: bound / 1000, ...s.labels }, value: cumulative });
    }
    const count = s.bucketsMs.reduce((n, r) => n + r.n, 0);
    values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', ...s.labels }, value: count });
    values.push({ metricName: `${name}_sum`, labels: s.labels, value: s.sumMs / 1000 });
    values.push({ metricName: `${name}_count`, labels: s.labels, value: count });
  }
  const metric = { name, help, type: 'histogram', aggregator: 'sum', get: async () => ({ name, help, type: 'histogram', aggregator: 'sum', values }), reset: () => undefined };
  return metric as unknown as Metric<string>;
}

function lockWaitHistogram(lockWaits: LockWaitTotal[]): Metric<string> {
  const byType = new Map<string, LockWaitTotal[]>();
  for (const r of lockWaits) byType.set(r.operation, [...(byType.get(r.operation) ?? []), r]);
  return persistedHistogram(
    'bridge_lock_acquisition_duration_seconds',
    'Time to acquire row locks (SELECT … FOR UPDATE), persisted by every console instance',
    LOCK_WAIT_BOUNDS_MS,
    [...byType].map(([lockType, rows]) => ({ labels: { lock_type: lockType }, bucketsMs: rows, sumMs: rows.reduce((n, r) => n + r.sumMs, 0) })),
  );
}

/** The lock history's counts: episodes recorded, how long the ended ones lasted, and the longest going on. */
function registerLockEpisodeMetrics(registry: Registry, e: LockEpisodeTotals): void {
  const registers = [registry];
  const ended = e.buckets.reduce((n, b) => n + b.n, 0);
  new Counter({ name: 'bridge_lock_episodes_total', help: 'Blocking episodes the lock history recorded (one per root blocker transaction that made others wait), storm-summarised ones included', registers }).inc(
    ended + e.summarised + e.inProgress,
  );
  registry.registerMetric(
    persistedHistogram('bridge_lock_episode_duration_seconds', 'How long ended blocking episodes lasted, from the first wait to the root blocker letting go', EPISODE_DURATION_BOUNDS_MS, [
      { labels: {}, bucketsMs: e.buckets, sumMs: e.buckets.reduce((n, b) => n + b.sumMs, 0) },
    ]),
  );
  new Gauge({ name: 'bridge_lock_blocking_longest_seconds', help: 'The longest blocking going on now (0 when nobody waits), as the lock history sampler last saw it', registers }).set(
    e.longestInProgressMs / 1000,
  );
}

/** The bridge_* metrics as a registry of their own, from persisted data. */
export function persistedRegistry(data: PersistedMetrics): Registry {
  const registry = new Registry();
  const registers = [registry];
  const outcome = (name: string) => data.outcomes.filter((o) => o.outcome === name);

  const acquisitions = new Counter({ name: 'bridge_lock_acquisitions_total', help: 'Row lock acquisitions by outcome: acquired, timeout (lock_timeout or NOWAIT refused), deadlock (chosen as victim)', labelNames: ['lock_type', 'status'], registers });
  for (const [lockType, n] of sumBy(data.lockWaits, (r) => r.operation, (r) => r.n)) acquisitions.inc({ lock_type: lockType, status: 'acquired' }, n);
  for (const o of outcome('lock_timeout')) acquisitions.inc({ lock_type: o.operation, status: 'timeout' }, o.n);
  for (const o of outcome('deadlock_detected')) acquisitions.inc({ lock_type: o.operation, status: 'deadlock' }, o.n);

  registry.registerMetric(lockWaitHistogram(data.lockWaits));

  const contentions = new Counter({ name: 'bridge_lock_contentions_total', help: `Lock acquisitions that had to wait: slower than ${CONTENTION_THRESHOLD_MS} ms, or timed out`, labelNames: ['lock_type'], registers });
  for (const [lockType, n] of sumBy(data.lockWaits.filter((r) => r.leMs === -1 || r.leMs > CONTENTION_THRESHOLD_MS), (r) => r.operation, (r) => r.n)) contentions.inc({ lock_type: lockType }, n);
  for (const o of outcome('lock_timeout')) contentions.inc({ lock_type: o.operation }, o.n);

  new Counter({ name: 'bridge_deadlock_detections_total', help: 'Deadlocks Postgres detected in our transactions (deadlock_events)', registers }).inc(data.deadlocks.detections);
  new Counter({ name: 'bridge_deadlock_retries_total', help: 'Deadlock victims retried automatically', registers }).inc(data.deadlocks.retries);

  const conflicts = [...outcome('version_conflict'), ...outcome('stale_expected_version')].reduce((n, o) => n + o.n, 0);
  new Counter({ name: 'bridge_version_conflicts_total', help: 'Version conflicts: optimistic attempts that met a newer version, and requests whose expectedVersion was stale', registers }).inc(conflicts);
  new Counter({ name: 'bridge_version_conflict_retries_total', help: 'Retries after a version conflict (with exponential backoff and jitter)', registers }).inc(outcome('retry').reduce((n, o) => n + o.n, 0));

  const active = new Gauge({ name: 'bridge_active_locks', help: 'Our transactions holding row locks right now, by the operation that took them', labelNames: ['lock_type'], registers });
  for (const a of data.activeLocks) active.set({ lock_type: a.lockType }, a.n);

  const outcomes = new Counter({ name: 'bridge_outcomes_total', help: 'Every persisted outcome of every operation (success, already_applied, version_conflict, retry, lock_timeout, deadlock_*, retries_exhausted, …)', labelNames: ['operation', 'outcome'], registers });
  for (const o of data.outcomes) outcomes.inc({ operation: o.operation, outcome: o.outcome }, o.n);

  const leases = new Counter({ name: 'bridge_lease_events_total', help: 'Lease events by backend and kind (acquired, denied, refreshed, released, expired), from the lease event log (kept LEASE_EVENTS_RETENTION_DAYS, 7 by default)', labelNames: ['backend', 'event'], registers });
  for (const e of data.leaseEvents ?? []) leases.inc({ backend: e.backend, event: e.event }, e.n);
  if (data.workers) registerWorkerMetrics(registry, data.workers);
  if (data.lockEpisodes) registerLockEpisodeMetrics(registry, data.lockEpisodes);

  new Gauge({ name: 'bridge_metrics_database_up', help: '1 when the persisted metrics could be read from Postgres on this scrape', registers }).set(1);
  return registry;
}

function databaseDownRegistry(): Registry {
  const registry = new Registry();
  new Gauge({ name: 'bridge_metrics_database_up', help: '1 when the persisted metrics could be read from Postgres on this scrape', registers: [registry] }).set(0);
  return registry;
}

/**
 * The whole exposition. When Postgres cannot be read, the process metrics still go out with
 * bridge_metrics_database_up 0, so the scrape itself succeeds and the outage is an alert, not a gap.
 */
export async function metricsText(): Promise<{ body: string; contentType: string }> {
  let persisted: Registry;
  try {
    persisted = persistedRegistry(await readPersistedMetrics());
  } catch (err) {
    console.error('[metrics] reading persisted metrics failed:', err);
    persisted = databaseDownRegistry();
  }
  const merged = Registry.merge([processRegistry(), persisted]);
  return { body: await merged.metrics(), contentType: merged.contentType };
}
