import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { LockSampler, type SamplerConfig } from '@/lib/locks/history/sampler';
import { runWithComparison } from '@/lib/replay/compare';
import { executeReplay, startReplay } from '@/lib/replay/runner';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { closeSession, holdRowLocks, session, started, waitForWaiters, type Session } from '../barriers';
import { makeIntent, resetDatabase } from '../helpers';
import { eventually } from '../wait';
import { apiRoute } from '@/lib/http/api-router';

const { GET: runRoute } = apiRoute('/api/console/replay/runs/{id}');

/**
 * A replay run lists the lock episodes it caused. The run's own execution holds one of its intents (the
 * nowait-executions scenario, its work made long enough to be caught), a plain session queues behind it, and the
 * sampler is ticked at that known point; meanwhile an unrelated blocking goes on in the same database, and after the
 * run another one on the run's intent: neither is the run's.
 */
const config: SamplerConfig = { sampleMs: 1000, idleMs: 1000, takeoverMs: 1000, episodesPerMinute: 120, backoff: { baseMs: 1000, maxMs: 30_000 } };
const sessions: Session[] = [];
let sampler: LockSampler | undefined;

beforeEach(async () => {
  await resetDatabase();
  await db().$executeRaw`TRUNCATE replay_runs`;
});

afterEach(async () => {
  await sampler?.stop();
  for (const s of sessions.splice(0)) await closeSession(s);
});

async function queueFor(intentId: string, name: string): Promise<{ s: Session; done: Promise<unknown> }> {
  const s = await session(name);
  s.on('error', () => undefined);
  sessions.push(s);
  await s.query('BEGIN');
  const done = started(s.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intentId]).then(() => s.query('COMMIT')));
  return { s, done };
}

/** The run's execution once it holds its intent and works (its pg_sleep): an event in pg_stat_activity. */
function runHoldingItsIntent(): Promise<{ pid: number; intentId: string }> {
  return eventually('the run to hold its intent', async () => {
    const [row] = await db().$queryRaw<{ pid: number; app: string }[]>`
      SELECT pid, application_name AS app FROM pg_stat_activity
      WHERE application_name LIKE 'bridge:pipeline_execute:%' AND state = 'active' AND query LIKE '%pg_sleep%' LIMIT 1`;
    return row ? { pid: row.pid, intentId: row.app.split(':')[2] } : null;
  });
}

describe('the lock episodes of a replay run', () => {
  it('are the episodes begun while it ran that involve its own intents, and no others', async () => {
    sampler = new LockSampler(config, process.env.DATABASE_URL!, () => undefined);
    expect((await sampler.tick()).role).toBe('leader');

    const run = await startReplay(
      { scenarios: ['nowait-executions'], size: 'small', sizes: { nowaitRounds: 1, nowaitWorkMs: 100_000 } },
      'cli',
      { name: 'release-engineer' },
      { environment: 'development' },
    );
    const finished = executeReplay(run);

    const holder = await runHoldingItsIntent();
    const waiter = await queueFor(holder.intentId, 'psql');
    // Other traffic at the same time: a blocking on an intent that is not the run's.
    const other = await makeIntent();
    const otherHolder = await holdRowLocks([other.id], 'someone-else');
    sessions.push(otherHolder.session);
    const otherWaiter = await queueFor(other.id, 'someone-else-waits');
    await waitForWaiters(2, { pids: [waiter.s.pid, otherWaiter.s.pid] });
    const opened = await sampler.tick();
    expect(opened.opened).toHaveLength(2);

    // The run's execution stops working (cancelled, as an operator would), its waiter gets the row.
    await db().$queryRaw`SELECT pg_cancel_backend(${holder.pid}::int)`;
    await waiter.done;
    await otherHolder.commit();
    await otherWaiter.done;
    expect((await sampler.tick()).closed).toHaveLength(2);
    const ended = await finished;
    expect(ended.status).toBe('finished');

    // After the run, a blocking on the run's intent: not the run's doing.
    const late = await holdRowLocks([holder.intentId], 'later');
    sessions.push(late.session);
    const lateWaiter = await queueFor(holder.intentId, 'later-waits');
    await waitForWaiters(1, { pids: [lateWaiter.s.pid] });
    expect((await sampler.tick()).opened).toHaveLength(1);
    await late.commit();
    await lateWaiter.done;

    const { lockEpisodes } = (await runWithComparison(run.id))!;
    expect(lockEpisodes.total).toBe(1);
    expect(lockEpisodes.items).toEqual([
      expect.objectContaining({ rootPid: holder.pid, rootApplication: `bridge:pipeline_execute:${holder.intentId}`, rootOperation: 'pipeline_execute', waitersSeen: 1, peakWaiters: 1, intentIds: [holder.intentId] }),
    ]);
    expect(lockEpisodes.items[0].endedAt).not.toBeNull();
    expect(lockEpisodes.stormMinutes).toEqual([]);

    // The same through the API the Replay page reads.
    await resetAuth();
    const reader = await userWithToken(['viewer']);
    const res = await runRoute(apiRequest(`/api/console/replay/runs/${run.id}`, { headers: { authorization: reader.authorization } }), { params: Promise.resolve({ id: run.id }) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { lockEpisodes: { items: { id: string }[] } };
    expect(body.lockEpisodes.items.map((e) => e.id)).toEqual([lockEpisodes.items[0].id]);
  });
});
