import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent } from '@/lib/intents/commands';
import { InvalidTransitionError } from '@/lib/intents/errors';
import { NotFoundError, ValidationError } from '@/lib/shared/errors';
import { getIntentAudit } from '@/lib/intents/queries';
import { getIntentTimeline } from '@/lib/timeline/timeline';
import { disconnectLockDb } from '@/lib/pipeline/lock';
import { workerConfig } from '@/lib/workers/config';
import { cancelScheduledRetry, retryNow, setClaimingPaused } from '@/lib/workers/control';
import { throughputSeries } from '@/lib/workers/queries';
import { claimDueIntents, scheduleRetry } from '@/lib/workers/repository';
import { Worker } from '@/lib/workers/worker';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { resetEngine } from '../barriers';
import { tester } from '../helpers';
import { eventually } from '../wait';
import { apiRoute } from '@/lib/http/api-router';

const { GET: metricsRoute } = apiRoute('/api/metrics');
const { GET: workersRoute } = apiRoute('/api/workers');

/** The workers registry, GET /api/workers, and the operators' queue controls with their audit. */
let token = '';
beforeAll(async () => {
  await resetAuth();
  token = (await userWithToken(['viewer'])).token;
});
beforeEach(resetEngine);
afterAll(disconnectLockDb);

const getWorkers = async (withToken = token) => {
  const res = await workersRoute(apiRequest('/api/workers', { token: withToken || undefined }), undefined);
  return { status: res.status, body: await res.json() };
};

describe('GET /api/workers', () => {
  it('lists registered workers with their heartbeats and the queue by state; 401 without a token', async () => {
    for (let i = 0; i < 3; i++) await createIntent({ payload: { order: `R-${i}` }, source: 'test' }, tester);
    const worker = new Worker(workerConfig({ pollMs: 20, heartbeatMs: 30, concurrency: 2 }), () => undefined);
    await worker.start();
    await eventually('the queue drained', async () => (await getWorkers()).body.queue.completed === 3);
    const { status, body } = await getWorkers();
    expect(status).toBe(200);
    expect(body.workers).toHaveLength(1);
    expect(body.workers[0]).toMatchObject({ id: worker.id, name: worker.name, state: 'running', concurrency: 2, pid: process.pid });
    expect(body.queue).toMatchObject({ ready: 0, scheduled: 0, running: 0, failed: 0, completed: 3 });
    await eventually('the counts flushed', async () => (await getWorkers()).body.totals.completed === 3);
    expect((await getWorkers()).body.totals).toMatchObject({ claimed: 3, completed: 3 });
    // The same counts on /api/metrics, with the queue depth and the stale-claims gauge the alert watches.
    const metrics = await (await metricsRoute(new Request('http://localhost/api/metrics'), undefined)).text();
    expect(metrics).toMatch(/^bridge_worker_claims_total 3$/m);
    expect(metrics).toMatch(/^bridge_worker_completions_total 3$/m);
    expect(metrics).toMatch(/^bridge_worker_queue_depth\{state="completed"\} 3$/m);
    expect(metrics).toMatch(/^bridge_worker_stale_claims 0$/m);
    expect(metrics).toMatch(/^bridge_workers\{state="running"\} 1$/m);
    await worker.stop();
    expect((await getWorkers()).body.workers[0].state).toBe('stopped');
    expect((await getWorkers('')).status).toBe(401);
  });

  it('a stop that comes while the worker registers (SIGTERM right after the start) leaves it stopped, not running', async () => {
    const worker = new Worker(workerConfig({ pollMs: 20, heartbeatMs: 30 }), () => undefined);
    const started = worker.start();
    // Asked before the registration has answered: the stop must not return before the worker is registered.
    await worker.stop();
    await started;
    const rows = await db().$queryRaw<{ state: string }[]>`SELECT state FROM workers WHERE id = ${worker.id}::uuid`;
    expect(rows).toEqual([{ state: 'stopped' }]);
    // Stopped for good: nothing of it runs on (no claim loop, no heartbeat turning it back to running).
    await createIntent({ payload: { order: 'R-after-stop' }, source: 'test' }, tester);
    expect((await getWorkers()).body.queue).toMatchObject({ ready: 1, running: 0 });
  });

  it('a worker that stops heartbeating is shown as lost (by the database clock)', async () => {
    await db().$executeRaw`INSERT INTO workers (id, name, host, pid, concurrency, heartbeat_at) VALUES (gen_random_uuid(), 'gone:1', 'gone', 1, 4, now() - interval '10 minutes')`;
    expect((await getWorkers()).body.workers[0]).toMatchObject({ name: 'gone:1', state: 'lost' });
  });
});

describe('queue controls', () => {
  it('pause and resume are audited once per change', async () => {
    expect(await setClaimingPaused(true, tester)).toEqual({ paused: true, changed: true });
    expect(await setClaimingPaused(true, tester)).toEqual({ paused: true, changed: false });
    expect((await getWorkers()).body.paused).toMatchObject({ paused: true, changedBy: tester.name });
    await setClaimingPaused(false, tester);
    const audit = await db().$queryRaw<{ action: string }[]>`SELECT action FROM audit_events WHERE intent_id IS NULL ORDER BY id`;
    expect(audit.map((a) => a.action)).toEqual(['workers_paused', 'workers_resumed']);
  });

  it('retry now makes a scheduled retry due; cancel takes it out of the queue; both audited; refusals name the state', async () => {
    const intent = await createIntent({ payload: { order: 'Q-1' }, source: 'test' }, tester);
    const [claim] = await claimDueIntents(db(), { workerName: 'w', limit: 1, leaseMs: 30_000, maxAttempts: 5 });
    expect(await retryNow(intent.id, tester).catch((e) => e)).toBeInstanceOf(InvalidTransitionError); // running: not ours to move
    await scheduleRetry(db(), { intentId: intent.id, claimToken: claim.claimToken, delayMs: 3_600_000, error: 'boom' });
    expect((await getWorkers()).body.queue.scheduled).toBe(1);
    expect((await getWorkers()).body.scheduled[0]).toMatchObject({ intentId: intent.id, lastError: 'boom' });
    await retryNow(intent.id, tester);
    expect((await getWorkers()).body.queue.ready).toBe(1);
    await cancelScheduledRetry(intent.id, tester);
    expect((await getWorkers()).body.queue).toMatchObject({ ready: 0, scheduled: 0 });
    expect(await claimDueIntents(db(), { workerName: 'w', limit: 1, leaseMs: 30_000, maxAttempts: 5 })).toEqual([]);
    const actions = (await getIntentAudit(intent.id)).map((e) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['retry_now', 'cancel_retry']));
    // The intent's timeline tells them in words, as the audit page's action filter offers them.
    const entries = (await getIntentTimeline(intent.id)).items.map((e) => [e.kind, e.summary]);
    // Filed with the pipeline's runs, where its queue's story is told, not under "other".
    expect(entries).toEqual(
      expect.arrayContaining([
        ['pipeline_run', 'Queued work made due now (Workers), after attempt 1'],
        ['pipeline_run', 'Taken out of the work queue (Workers), after attempt 1'],
      ]),
    );
    expect(await cancelScheduledRetry('00000000-0000-4000-8000-000000000000', tester).catch((e) => e)).toBeInstanceOf(NotFoundError);
    expect(await retryNow('nope', tester).catch((e) => e)).toBeInstanceOf(ValidationError);
  });
});

describe('throughput series', () => {
  it('one point per minute of the hour, gaps as zeros', () => {
    const now = new Date('2026-11-24T10:00:00Z');
    const series = throughputSeries([{ minute: new Date('2026-11-24T09:59:00Z'), event: 'completed', n: 5 }], now);
    expect(series).toHaveLength(60);
    expect(series.at(-1)).toMatchObject({ minute: '2026-11-24T10:00:00.000Z', completed: 0 });
    expect(series.at(-2)).toMatchObject({ minute: '2026-11-24T09:59:00.000Z', completed: 5, claimed: 0 });
  });

  it('rows outside the hour, or of an event the chart does not draw, are left out', () => {
    const now = new Date('2026-11-24T10:00:00Z');
    const series = throughputSeries(
      [
        { minute: new Date('2026-11-24T08:00:00Z'), event: 'completed', n: 9 },
        { minute: new Date('2026-11-24T09:58:00Z'), event: 'minute', n: 9 },
        { minute: new Date('2026-11-24T09:58:00Z'), event: 'lost', n: 9 },
        { minute: new Date('2026-11-24T09:58:00Z'), event: 'claimed', n: 2n },
      ],
      now,
    );
    expect(series).toHaveLength(60);
    expect(series.at(-3)).toEqual({ minute: '2026-11-24T09:58:00.000Z', claimed: 2, completed: 0, failed: 0, retried: 0, rescued: 0 });
    expect(series.reduce((sum, p) => sum + p.claimed + p.completed + p.failed + p.retried + p.rescued, 0)).toBe(2);
  });
});
