import { beforeEach, describe, expect, it } from 'vitest';
import { GET } from '@/app/api/metrics/route';
import { db } from '@/lib/db/client';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { LockTimeoutError } from '@/lib/intents/errors';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { CONTENTION_THRESHOLD_MS, persistedRegistry, readPersistedMetrics } from '@/lib/metrics/registry';
import { runReplay } from '@/lib/replay/runner';
import { crossingOrderTransaction, executePipelineStandIn } from '@/lib/replay/transactions';
import { makeIntent, rawClient, resetDatabase, tester } from '../helpers';
import { waitForWaiters } from '../barriers';
import { parseExposition } from './exposition';

async function scrape() {
  const res = await GET(new Request('http://console.test/api/metrics'), undefined);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

const sql = async (query: TemplateStringsArray) => Number((await db().$queryRaw<{ n: number }[]>(query))[0].n);

describe('GET /api/metrics', () => {
  beforeEach(async () => {
    await resetDatabase();
    await db().$executeRaw`TRUNCATE replay_runs`;
  });

  it('exports the documented metrics from what is persisted, plus the process defaults', async () => {
    // Real traffic: status updates (lock waits), crossing-order deadlocks, NOWAIT refusals, contended corrections —
    // the replay's transactions, but run as live work (a replay run's own figures are kept out, checked below).
    const intent = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester);
    for (let round = 0; round < 2; round++) {
      const [a, b] = await Promise.all([makeIntent('RECEIVED'), makeIntent('RECEIVED')]);
      let arrived = 0;
      let bothHoldFirst!: () => void;
      const met = new Promise<void>((resolve) => (bothHoldFirst = resolve));
      const barrier = async () => {
        if (++arrived === 2) bothHoldFirst();
        await met;
      };
      await Promise.all([crossingOrderTransaction(a.id, b.id, tester, { lockTimeoutMs: 5000, barrier }), crossingOrderTransaction(b.id, a.id, tester, { lockTimeoutMs: 5000, barrier })]);
      const target = await makeIntent('RECEIVED');
      let locked!: () => void;
      const firstHolds = new Promise<void>((resolve) => (locked = resolve));
      const first = executePipelineStandIn(target.id, tester, { workMs: 150, lockTimeoutMs: 5000, onLocked: locked });
      await firstHolds;
      await expect(executePipelineStandIn(target.id, tester, { workMs: 150, lockTimeoutMs: 5000 })).rejects.toBeInstanceOf(LockTimeoutError);
      await first;
    }
    const contended = await makeIntent('PROCESSED');
    await Promise.all([1, 2, 3].map((k) => reevaluateIntent({ id: contended.id, diff: { [`k${k}`]: k }, source: 'svc', reason: 'contended' }, tester)));
    // A replay run adds nothing to what is exported.
    await flushOutcomes();
    const before = await readPersistedMetrics();
    await runReplay({ scenarios: ['crossing-deadlock', 'nowait-executions', 'corrections-3'], size: 'small', targets: { deadlockRecoveryMeanMaxMs: 60_000, nowaitFailFastMaxMs: 60_000 } }, 'cli', tester, { environment: 'development' });
    await flushOutcomes();
    const after = await readPersistedMetrics();
    expect({ ...after, activeLocks: [] }).toEqual({ ...before, activeLocks: [] });

    const { values, types } = await scrape();
    expect(types.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
    for (const [name, type] of [
      ['bridge_lock_acquisitions_total', 'counter'],
      ['bridge_lock_acquisition_duration_seconds', 'histogram'],
      ['bridge_lock_contentions_total', 'counter'],
      ['bridge_deadlock_detections_total', 'counter'],
      ['bridge_deadlock_retries_total', 'counter'],
      ['bridge_version_conflicts_total', 'counter'],
      ['bridge_version_conflict_retries_total', 'counter'],
      ['bridge_active_locks', 'gauge'],
    ]) {
      expect(types.get(name), name).toBe(type);
    }

    // Counters equal the persisted totals.
    expect(values.get('bridge_deadlock_detections_total')).toBe(await sql`SELECT count(*)::float8 AS n FROM deadlock_events WHERE NOT is_replay`);
    expect(values.get('bridge_deadlock_detections_total')).toBeGreaterThanOrEqual(2);
    expect(values.get('bridge_deadlock_retries_total')).toBe(await sql`SELECT count(*)::float8 AS n FROM deadlock_events WHERE retried AND NOT is_replay`);
    expect(values.get('bridge_version_conflict_retries_total')).toBe(await sql`SELECT coalesce(sum(count), 0)::float8 AS n FROM outcome_counts WHERE outcome = 'retry' AND NOT is_replay`);
    expect(values.get('bridge_version_conflicts_total')).toBe(
      await sql`SELECT coalesce(sum(count), 0)::float8 AS n FROM outcome_counts WHERE outcome IN ('version_conflict', 'stale_expected_version') AND NOT is_replay`,
    );
    const acquired = await sql`SELECT sum(count)::float8 AS n FROM lock_wait_buckets WHERE operation = 'update_status' AND NOT is_replay`;
    expect(acquired).toBeGreaterThan(0);
    expect(values.get('bridge_lock_acquisitions_total{lock_type="update_status",status="acquired"}')).toBe(acquired);
    expect(values.get('bridge_lock_acquisitions_total{lock_type="pipeline_execute",status="timeout"}')).toBe(2);
    expect(values.get('bridge_lock_acquisitions_total{lock_type="replay_crossing_order",status="deadlock"}')).toBeGreaterThanOrEqual(2);
    expect(values.get('bridge_outcomes_total{operation="update_status",outcome="success"}')).toBeGreaterThan(0);
    expect(values.get('bridge_metrics_database_up')).toBe(1);

    // The histogram: cumulative buckets, +Inf = count, a real _sum.
    const h = 'bridge_lock_acquisition_duration_seconds';
    const buckets = [...values.entries()].filter(([k]) => k.startsWith(`${h}_bucket{`) && k.includes('lock_type="update_status"'));
    const counts = buckets.map(([, v]) => v);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(values.get(`${h}_bucket{le="+Inf",lock_type="update_status"}`)).toBe(acquired);
    expect(values.get(`${h}_count{lock_type="update_status"}`)).toBe(acquired);
    const sumSeconds = values.get(`${h}_sum{lock_type="update_status"}`)!;
    expect(sumSeconds).toBeGreaterThan(0);
    expect(sumSeconds).toBeCloseTo((await sql`SELECT sum(sum_ms)::float8 AS n FROM lock_wait_buckets WHERE operation = 'update_status' AND NOT is_replay`) / 1000, 6);

    // Contentions: waits above the threshold plus timeouts.
    const slow = await sql`SELECT coalesce(sum(count), 0)::float8 AS n FROM lock_wait_buckets WHERE operation = 'pipeline_execute' AND (le_ms = -1 OR le_ms > 5) AND NOT is_replay`;
    expect(CONTENTION_THRESHOLD_MS).toBe(5);
    expect(values.get('bridge_lock_contentions_total{lock_type="pipeline_execute"}')).toBe(slow + 2);
  });

  it('is the same from every console instance: nothing comes from this process’s memory', async () => {
    const intent = await makeIntent('RECEIVED');
    await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester);
    await flushOutcomes();
    // Two registries built independently from the database, as two instances would.
    const a = await persistedRegistry(await readPersistedMetrics()).metrics();
    const b = await persistedRegistry(await readPersistedMetrics()).metrics();
    expect(a).toBe(b);
    // Counts another process wrote reach this one's scrape.
    await db().$executeRaw`INSERT INTO outcome_counts (minute, operation, transition, outcome, count) VALUES (date_trunc('minute', now()), 'update_status', '', 'version_conflict', 7)`;
    expect((await scrape()).values.get('bridge_version_conflicts_total')).toBe(7);
  });

  it('counts transactions holding row locks right now, by operation', async () => {
    const intent = await makeIntent('RECEIVED');
    const holder = await rawClient(`bridge:update_status:${intent.id}`);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
      // A waiter queued behind it is not a holder.
      const waiter = updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester);
      await waitForWaiters(1);
      const { values } = await scrape();
      expect(values.get('bridge_active_locks{lock_type="update_status"}')).toBe(1);
      await holder.query('COMMIT');
      await waiter;
    } finally {
      await holder.end();
    }
    expect((await scrape()).values.get('bridge_active_locks{lock_type="update_status"}')).toBeUndefined();
  });
});
