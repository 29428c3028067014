import type { Tx } from '@/lib/db/client';
import { readDb, replicaStatus } from '@/lib/db/read';
import type { ReplicaStatus } from '@/lib/db/replicas';
import { env } from '@/lib/env';
import { pipelineFailure } from '@/lib/pipeline/rerun-queries';
import { listOpenWaits, type WaitView } from '@/lib/pipeline/waits';

/** What the Workers page and GET /api/workers show: the registry, the queue by state, claims, retries, throughput. */
export type WorkerView = {
  id: string;
  name: string;
  host: string;
  pid: number;
  /** running | stopping | stopped | lost (no heartbeat for three heartbeat periods, by the database's clock) */
  state: 'running' | 'stopping' | 'stopped' | 'lost';
  concurrency: number;
  inFlight: number;
  claims: number;
  startedAt: string;
  heartbeatAt: string;
  heartbeatAgeMs: number;
  stoppedAt: string | null;
};

/** `waiting`: a bridge waits for an answer from outside; the row holds no claim until the answer or its deadline. */
export type QueueDepth = { ready: number; scheduled: number; running: number; waiting: number; failed: number; completed: number; cancelled: number; stale: number };

export type ClaimView = { intentId: string; claimedBy: string | null; attempt: number; maxAttempts: number; claimedAt: string | null; heartbeatAt: string | null; leaseUntil: string | null; stale: boolean };
export type ScheduledView = { intentId: string; state: 'available' | 'retryable'; attempt: number; maxAttempts: number; runAfter: string; lastError: string | null; rescues: number };
export type FailedView = { intentId: string; attempt: number; maxAttempts: number; finishedAt: string | null; lastError: string | null };
export type ThroughputPoint = { minute: string; claimed: number; completed: number; failed: number; retried: number; rescued: number };

export type WorkersOverview = {
  workers: WorkerView[];
  queue: QueueDepth;
  /** Since when the longest-waiting due intent has been due (its queue latency); null when nothing is due. */
  oldestReadySince: string | null;
  paused: { paused: boolean; changedBy: string | null; changedAt: string | null };
  claims: ClaimView[];
  scheduled: ScheduledView[];
  failed: FailedView[];
  /** The intents whose bridge waits for an answer, the nearest deadline first. */
  waits: WaitView[];
  throughput: ThroughputPoint[];
  totals: Record<'claimed' | 'completed' | 'failed' | 'retried' | 'released' | 'rescued' | 'lost', number>;
  /** The read replicas as this instance's monitor sees them (empty without DATABASE_READ_URL): no query of its own. */
  replicas: ReplicaStatus[];
};

const iso = (d: Date | null) => d?.toISOString() ?? null;

export async function selectQueueDepth(tx: Tx): Promise<QueueDepth> {
  const [row] = await tx.$queryRaw<Record<keyof QueueDepth, bigint>[]>`
    SELECT count(*) FILTER (WHERE state IN ('available', 'retryable') AND run_after <= now()) AS ready,
           count(*) FILTER (WHERE state IN ('available', 'retryable') AND run_after > now()) AS scheduled,
           count(*) FILTER (WHERE state = 'running') AS running,
           count(*) FILTER (WHERE state = 'waiting') AS waiting,
           count(*) FILTER (WHERE ${pipelineFailure('intent_work')}) AS failed,
           count(*) FILTER (WHERE state = 'completed') AS completed,
           count(*) FILTER (WHERE state = 'cancelled') AS cancelled,
           count(*) FILTER (WHERE state = 'running' AND lease_until < now()) AS stale
    FROM intent_work`;
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])) as QueueDepth;
}

/** Worker events summed over all time, by event (the metrics' counters). */
export async function selectWorkerTotals(tx: Tx): Promise<WorkersOverview['totals']> {
  const rows = await tx.$queryRaw<{ event: string; n: bigint }[]>`SELECT event, sum(count) AS n FROM worker_stats GROUP BY event`;
  const totals = { claimed: 0, completed: 0, failed: 0, retried: 0, released: 0, rescued: 0, lost: 0 };
  for (const r of rows) if (r.event in totals) totals[r.event as keyof typeof totals] = Number(r.n);
  return totals;
}

export async function getWorkersOverview(): Promise<WorkersOverview> {
  const [overview, replicas] = await Promise.all([readOverview(), replicaStatus()]);
  return { ...overview, replicas };
}

async function readOverview(): Promise<Omit<WorkersOverview, 'replicas'>> {
  const lostAfterMs = Math.max(3 * env().WORKER_HEARTBEAT_MS, 15_000);
  return (await readDb()).$transaction(
    async (tx) => {
      await tx.$executeRaw`SELECT set_config('statement_timeout', '3000ms', true)`;
      const workers = await tx.$queryRaw<(Omit<WorkerView, 'startedAt' | 'heartbeatAt' | 'stoppedAt' | 'claims'> & { startedAt: Date; heartbeatAt: Date; stoppedAt: Date | null; claims: bigint })[]>`
        SELECT w.id::text AS id, w.name, w.host, w.pid, w.concurrency, w.in_flight AS "inFlight",
               CASE WHEN w.state <> 'stopped' AND w.heartbeat_at < now() - ${lostAfterMs} * interval '1 millisecond' THEN 'lost' ELSE w.state END AS state,
               w.started_at AS "startedAt", w.heartbeat_at AS "heartbeatAt", w.stopped_at AS "stoppedAt",
               (extract(epoch FROM now() - w.heartbeat_at) * 1000)::float8 AS "heartbeatAgeMs",
               (SELECT count(*) FROM intent_work c WHERE c.state = 'running' AND c.claimed_by = w.name) AS claims
        FROM workers w
        ORDER BY (w.state = 'stopped'), w.started_at DESC
        LIMIT 100`;
      const queue = await selectQueueDepth(tx);
      // The front of the due index: one row, whatever the queue's length.
      const [oldestReady] = await tx.$queryRaw<{ since: Date }[]>`
        SELECT run_after AS since FROM intent_work WHERE state IN ('available', 'retryable') AND run_after <= now() ORDER BY run_after, intent_id LIMIT 1`;
      const [control] = await tx.$queryRaw<{ paused: boolean; changedBy: string | null; changedAt: Date | null }[]>`
        SELECT paused, changed_by AS "changedBy", changed_at AS "changedAt" FROM worker_control`;
      const claims = await tx.$queryRaw<(Omit<ClaimView, 'claimedAt' | 'heartbeatAt' | 'leaseUntil'> & { claimedAt: Date | null; heartbeatAt: Date | null; leaseUntil: Date | null })[]>`
        SELECT intent_id::text AS "intentId", claimed_by AS "claimedBy", attempt, max_attempts AS "maxAttempts", claimed_at AS "claimedAt",
               heartbeat_at AS "heartbeatAt", lease_until AS "leaseUntil", lease_until < now() AS stale
        FROM intent_work WHERE state = 'running' ORDER BY lease_until LIMIT 50`;
      const scheduled = await tx.$queryRaw<(Omit<ScheduledView, 'runAfter'> & { runAfter: Date })[]>`
        SELECT intent_id::text AS "intentId", state, attempt, max_attempts AS "maxAttempts", run_after AS "runAfter", last_error AS "lastError", rescues
        FROM intent_work WHERE state IN ('available', 'retryable') AND (state = 'retryable' OR run_after > now())
        ORDER BY run_after LIMIT 50`;
      const failed = await tx.$queryRaw<(Omit<FailedView, 'finishedAt'> & { finishedAt: Date | null })[]>`
        SELECT intent_id::text AS "intentId", attempt, max_attempts AS "maxAttempts", finished_at AS "finishedAt", last_error AS "lastError"
        FROM intent_work WHERE ${pipelineFailure('intent_work')} ORDER BY finished_at DESC NULLS LAST LIMIT 20`;
      const waits = await listOpenWaits(tx);
      const series = await tx.$queryRaw<{ minute: Date; event: string; n: bigint }[]>`
        SELECT minute, event, count AS n FROM worker_stats WHERE minute >= date_trunc('minute', now()) - interval '59 minutes' ORDER BY minute`;
      const totals = await selectWorkerTotals(tx);
      const [now] = await tx.$queryRaw<{ now: Date }[]>`SELECT date_trunc('minute', now()) AS now`;
      return {
        workers: workers.map((w) => ({ ...w, claims: Number(w.claims), startedAt: w.startedAt.toISOString(), heartbeatAt: w.heartbeatAt.toISOString(), stoppedAt: iso(w.stoppedAt) })),
        queue,
        oldestReadySince: iso(oldestReady?.since ?? null),
        paused: { paused: control?.paused ?? false, changedBy: control?.changedBy ?? null, changedAt: iso(control?.changedAt ?? null) },
        claims: claims.map((c) => ({ ...c, claimedAt: iso(c.claimedAt), heartbeatAt: iso(c.heartbeatAt), leaseUntil: iso(c.leaseUntil) })),
        scheduled: scheduled.map((s) => ({ ...s, runAfter: s.runAfter.toISOString() })),
        failed: failed.map((f) => ({ ...f, finishedAt: iso(f.finishedAt) })),
        waits,
        throughput: throughputSeries(series, now.now),
        totals,
      };
    },
    { isolationLevel: 'RepeatableRead', maxWait: 3000, timeout: 10_000 },
  );
}

/** Per-minute rows into one point per minute of the last hour, gaps filled with zeros (the chart's x-axis is time). */
export function throughputSeries(rows: { minute: Date; event: string; n: bigint | number }[], now: Date, minutes = 60): ThroughputPoint[] {
  const points = new Map<number, ThroughputPoint>();
  for (let i = minutes - 1; i >= 0; i--) {
    const t = now.getTime() - i * 60_000;
    points.set(t, { minute: new Date(t).toISOString(), claimed: 0, completed: 0, failed: 0, retried: 0, rescued: 0 });
  }
  for (const r of rows) {
    const p = points.get(r.minute.getTime());
    if (p && r.event in p && r.event !== 'minute') (p[r.event as Exclude<keyof ThroughputPoint, 'minute'>] as number) += Number(r.n);
  }
  return [...points.values()];
}
