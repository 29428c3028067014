import { Counter, Gauge, type Registry } from 'prom-client';
import type { Tx } from '@/lib/db/client';
import { selectQueueDepth, selectWorkerTotals, type QueueDepth, type WorkersOverview } from './queries';

/**
 * The workers' metrics, from what they persisted (worker_stats, intent_work, workers), so every console instance
 * exports the same totals whichever processes the workers run in.
 */
export type WorkerMetrics = { totals: WorkersOverview['totals']; queue: QueueDepth; workers: { state: string; n: number }[] };

export async function readWorkerMetrics(tx: Tx, lostAfterMs = 15_000): Promise<WorkerMetrics> {
  const workers = await tx.$queryRaw<{ state: string; n: bigint }[]>`
    SELECT CASE WHEN state <> 'stopped' AND heartbeat_at < now() - ${lostAfterMs} * interval '1 millisecond' THEN 'lost' ELSE state END AS state, count(*) AS n
    FROM workers GROUP BY 1`;
  return { totals: await selectWorkerTotals(tx), queue: await selectQueueDepth(tx), workers: workers.map((w) => ({ state: w.state, n: Number(w.n) })) };
}

export function registerWorkerMetrics(registry: Registry, data: WorkerMetrics): void {
  const registers = [registry];
  const counter = (name: string, help: string, n: number) => new Counter({ name, help, registers }).inc(n);
  counter('bridge_worker_claims_total', 'Intents claimed by workers (each claim of each attempt)', data.totals.claimed);
  counter('bridge_worker_completions_total', 'Claims that ended with the pipeline run to its end', data.totals.completed);
  counter('bridge_worker_failures_total', 'Claims that ended with the intent FAILED (after the maximum of attempts)', data.totals.failed);
  counter('bridge_worker_retries_total', 'Failed attempts scheduled for a retry with backoff', data.totals.retried);
  counter('bridge_worker_rescues_total', 'Stale claims (lease ran out by the database clock) rescued', data.totals.rescued);
  counter('bridge_worker_lost_claims_total', 'Claims whose worker found them rescued or released before it could settle them', data.totals.lost);
  const depth = new Gauge({ name: 'bridge_worker_queue_depth', help: 'Work queue rows by state (ready: due now; scheduled: waiting for run_after; waiting: a bridge waits for an answer)', labelNames: ['state'], registers });
  for (const state of ['ready', 'scheduled', 'running', 'waiting', 'failed', 'completed', 'cancelled'] as const) depth.set({ state }, data.queue[state]);
  new Gauge({ name: 'bridge_worker_stale_claims', help: 'Running claims whose lease has run out and that are not rescued yet', registers }).set(data.queue.stale);
  const workers = new Gauge({ name: 'bridge_workers', help: 'Registered worker processes by state (lost: no heartbeat lately)', labelNames: ['state'], registers });
  for (const state of ['running', 'stopping', 'stopped', 'lost']) workers.set({ state }, data.workers.find((w) => w.state === state)?.n ?? 0);
}
