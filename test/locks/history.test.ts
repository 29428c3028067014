import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { db } from '@/lib/db/client';
import { maintainPartitions, partitionPolicy } from '@/lib/db/partitions';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { episodesForIntent, getEpisode, listEpisodes } from '@/lib/locks/history/episodes';
import { LockSampler, type SamplerConfig } from '@/lib/locks/history/sampler';
import { NotBlockingError } from '@/lib/locks/errors';
import { terminateBackend, unblockImpact } from '@/lib/locks/unblock';
import { metricsText } from '@/lib/metrics/registry';
import { actorOf, apiRequest, makeUser, resetAuth, userWithToken } from '../auth-helpers';
import { closeSession, gate, holdRowLocks as holdRowLocksOnce, session as sessionOnce, started, waitForWaiters, type Session } from '../barriers';
import { engineEventsWritten } from '@/lib/intents/engine-events';
import { crossingOrderTransaction } from '@/lib/replay/transactions';
import { makeIntent, resetDatabase, tester } from '../helpers';
import { eventually } from '../wait';
import { apiRoute } from '@/lib/http/api-router';

const { GET: listRoute } = apiRoute('/api/locks/episodes');
const { GET: getRoute } = apiRoute('/api/locks/episodes/{id}');

/**
 * The lock history against real blocking: sessions hold row locks, others queue behind them, and the test moves the
 * sampler forward by calling its tick itself (never by waiting for its timer), so each sample happens at a known
 * point of the interleaving.
 */
const config: SamplerConfig = { sampleMs: 1000, idleMs: 1000, takeoverMs: 1000, episodesPerMinute: 120, backoff: { baseMs: 1000, maxMs: 30_000 } };
const samplers: LockSampler[] = [];
/** Every session a test opened, closed after it whatever happened (a failed test must not leave rows locked). */
const sessions: Session[] = [];

async function session(name: string): Promise<Session> {
  const s = await sessionOnce(name);
  s.on('error', () => undefined); // a terminated session reports an error event
  sessions.push(s);
  return s;
}

async function holdRowLocks(ids: string[], name: string) {
  const held = await holdRowLocksOnce(ids, name);
  held.session.on('error', () => undefined);
  sessions.push(held.session);
  return held;
}

function sampler(overrides: Partial<SamplerConfig> = {}): LockSampler {
  const s = new LockSampler({ ...config, ...overrides }, process.env.DATABASE_URL!, () => undefined);
  samplers.push(s);
  return s;
}

beforeEach(async () => {
  await resetDatabase();
});

afterEach(async () => {
  for (const s of samplers.splice(0)) await s.stop();
  for (const s of sessions.splice(0)) await closeSession(s);
});

/** A plain session that queues for the intent's row (a person's psql, or a service without the engine). */
async function queueFor(intentId: string, name = 'psql'): Promise<{ s: Session; done: Promise<unknown> }> {
  const s = await session(name);
  await s.query('BEGIN');
  const done = started(s.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intentId]).then(() => s.query('COMMIT')));
  return { s, done };
}

const ms = (iso: string) => new Date(iso).getTime();

describe('episodes', () => {
  it('opens when a waiter appears, ends when the root commits, with the root, its waiters and the intent', async () => {
    const intent = await makeIntent();
    const s = sampler();
    expect((await s.tick()).role).toBe('leader');

    const holder = await holdRowLocks([intent.id], 'psql');
    // Nobody waits yet: a transaction holding a row is no episode.
    expect(await s.tick()).toMatchObject({ waiting: 0, opened: [] });

    const firstWaitStarted = Date.now();
    // A status change and a correction: one process sends one command of each kind to a held row, no more
    // (docs/LOCKING.md, "Waiting on a held row").
    const waiters = [
      started(updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester)),
      started(reevaluateIntent({ id: intent.id, diff: { checked: true }, source: 'history-test', reason: 'a second waiter' }, tester)),
    ];
    await waitForWaiters(2, { application: 'bridge:' });
    const first = await s.tick();
    const firstSeen = Date.now();
    expect(first.opened).toHaveLength(1);
    const id = first.opened[0];
    expect((await s.tick()).continued).toEqual([id]);
    const lastSampleBeforeEnd = Date.now();

    const committedAt = Date.now();
    await holder.commit();
    await Promise.all(waiters);
    const end = await s.tick();
    const endSample = Date.now();
    expect(end.closed).toEqual([id]);

    const episode = (await getEpisode({ id }))!;
    expect(episode.root).toMatchObject({ pid: holder.session.pid, applicationName: 'psql', state: 'idle in transaction' });
    expect(episode.root.intents).toEqual([intent.id]);
    expect(episode.waiters.map((w) => w.operation).sort()).toEqual(['reevaluate', 'update_status']);
    expect(episode.waiters.every((w) => w.intents.includes(intent.id) && w.actor === tester.name)).toBe(true);
    expect(episode.peakWaiters).toBe(2);
    expect(episode.intents).toEqual(expect.arrayContaining([{ id: intent.id, role: 'root' }, { id: intent.id, role: 'waiter' }]));
    expect(episode.locks).toEqual(expect.arrayContaining([expect.objectContaining({ lockType: 'transactionid', mode: 'ShareLock', granted: false })]));
    // The holder's table lock once, not again for each of the table's indexes.
    expect(episode.locks.filter((l) => l.lockType === 'relation' && l.granted).map((l) => l.relation)).toEqual(['intents']);
    expect(episode.sampleTrees.length).toBeGreaterThanOrEqual(1);
    expect(episode.sampleTrees[0].tree.tree[0]).toMatchObject({ pid: holder.session.pid, waitingBehind: 2 });

    // The truth: from the first wait to the commit. The sampler can be off by one sample at each end: at the start,
    // the time from the first wait to the first tick's answer; at the end, the gap between the last two ticks.
    const truth = committedAt - firstWaitStarted;
    const oneSample = endSample - lastSampleBeforeEnd;
    expect(Math.abs(episode.durationMs - truth)).toBeLessThanOrEqual(oneSample + (firstSeen - firstWaitStarted) + 50);
    expect(ms(episode.startedAt)).toBeGreaterThanOrEqual(firstWaitStarted - 50);

    const { body } = await metricsText();
    expect(body).toMatch(/^bridge_lock_episodes_total 1$/m);
    expect(body).toMatch(/^bridge_lock_episode_duration_seconds_count 1$/m);
    expect(body).toMatch(/^bridge_lock_blocking_longest_seconds 0$/m);

    expect(await episodesForIntent(intent.id)).toEqual([
      {
        id,
        startedAt: episode.startedAt,
        endedAt: episode.endedAt,
        durationMs: episode.durationMs,
        peakWaiters: 2,
        rootPid: holder.session.pid,
        rootLabel: 'psql',
        rootState: 'idle in transaction',
        rootXactStart: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        waitedBy: [`${tester.name} (reevaluate)`, `${tester.name} (update_status)`],
        role: 'root',
        writeSeq: expect.stringMatching(/^\d+$/),
      },
    ]);
    // The holder's transaction began before anyone waited behind it.
    const [{ rootXactStart }] = await episodesForIntent(intent.id);
    expect(ms(rootXactStart!)).toBeLessThanOrEqual(ms(episode.startedAt));
  });

  it('keeps a chain (A blocks B blocks C) as one episode, and two independent roots as two', async () => {
    const [one, two, three] = [await makeIntent(), await makeIntent(), await makeIntent()];
    const a = await holdRowLocks([one.id], 'holder-a');
    const b = await holdRowLocks([two.id], 'holder-b');
    const bWaits = started(b.session.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [one.id]));
    const c = await queueFor(two.id, 'waiter-c');
    const d = await holdRowLocks([three.id], 'holder-d');
    const e = await queueFor(three.id, 'waiter-e');
    await waitForWaiters(3, { pids: [b.session.pid, c.s.pid, e.s.pid] });

    const s = sampler();
    const tick = await s.tick();
    expect(tick.opened).toHaveLength(2);
    const page = await listEpisodes({});
    const byRoot = new Map(page.items.map((i) => [i.root.pid, i]));
    expect([...byRoot.keys()].sort()).toEqual([a.session.pid, d.session.pid].sort());
    expect(byRoot.get(a.session.pid)!.waiters.map((w) => w.pid).sort()).toEqual([b.session.pid, c.s.pid].sort());
    expect(byRoot.get(a.session.pid)!.peakWaiters).toBe(2);
    expect(byRoot.get(a.session.pid)!.intents).toEqual(
      expect.arrayContaining([{ id: one.id, role: 'root' }, { id: one.id, role: 'waiter' }, { id: two.id, role: 'waiter' }]),
    );
    expect(byRoot.get(d.session.pid)!.waiters.map((w) => w.pid)).toEqual([e.s.pid]);
    expect((await listEpisodes({ intentId: three.id })).items.map((i) => i.root.pid)).toEqual([d.session.pid]);
    expect((await listEpisodes({ application: 'waiter-e' })).items.map((i) => i.root.pid)).toEqual([d.session.pid]);

    // D lets go: its episode ends, A's goes on.
    await d.commit();
    await e.done;
    const after = await s.tick();
    expect(after.closed).toEqual([byRoot.get(d.session.pid)!.id]);
    expect(after.continued).toEqual([byRoot.get(a.session.pid)!.id]);

    await a.commit();
    await bWaits;
    // B now holds both rows and C still waits: B is a new root, a new episode.
    const next = await s.tick();
    expect(next.closed).toEqual([byRoot.get(a.session.pid)!.id]);
    expect(next.opened).toHaveLength(1);
    expect((await getEpisode({ id: next.opened[0] }))!.root.pid).toBe(b.session.pid);
    await b.commit();
    await c.done;
  });

  it('summarises new roots beyond the per-minute budget instead of writing each', async () => {
    const [one, two] = [await makeIntent(), await makeIntent()];
    const holders = [await holdRowLocks([one.id], 'holder-1'), await holdRowLocks([two.id], 'holder-2')];
    const queued = [await queueFor(one.id), await queueFor(two.id)];
    await waitForWaiters(2, { pids: queued.map((q) => q.s.pid) });
    const s = sampler({ episodesPerMinute: 1 });
    const tick = await s.tick();
    expect(tick.opened).toHaveLength(1);
    expect(tick.summarised).toBe(1);
    // Seen again, the summarised root is not opened in a later sample either.
    expect(await s.tick()).toMatchObject({ opened: [], summarised: 0 });
    const page = await listEpisodes({});
    expect(page.items).toHaveLength(1);
    expect(page.storms).toEqual([expect.objectContaining({ episodes: 1, peakWaiters: 1 })]);
    for (const h of holders) await h.commit();
    await Promise.all(queued.map((q) => q.done));
  });

  it('links an unblock of a root idle in its transaction to the episode it ended', async () => {
    await resetAuth();
    const oncall = actorOf((await makeUser(['oncall'])).user, 'session');
    const intent = await makeIntent();
    const holder = await holdRowLocks([intent.id], 'psql');
    const queued = await queueFor(intent.id, 'api-retry');
    await waitForWaiters(1, { pids: [queued.s.pid] });
    const s = sampler();
    const [id] = (await s.tick()).opened;
    expect((await getEpisode({ id }))!.root.state).toBe('idle in transaction');

    const result = await terminateBackend(oncall, { pid: holder.session.pid, reason: 'idle in transaction holding the row' });
    expect(result.signalled).toBe(true);
    await queued.done;
    expect((await s.tick()).closed).toEqual([id]);
    const episode = (await getEpisode({ id }))!;
    expect(episode.links.unblocks).toEqual([expect.objectContaining({ action: 'backend_terminate', actor: oncall.name, pid: holder.session.pid, signalled: true, intentId: intent.id })]);
  });
});

describe('what happened inside an episode', () => {
  it('links the lock timeout of a waiter and the deadlock that ended it', async () => {
    const [x, y] = [await makeIntent(), await makeIntent()];
    const s = sampler();
    // Two transactions lock x and y in opposite orders, each held after its first lock (a barrier) until let go.
    const arrived = [gate(), gate()];
    const go = [gate(), gate()];
    const barrier = (k: number) => () => {
      arrived[k].open();
      return go[k].wait;
    };
    const first = started(crossingOrderTransaction(x.id, y.id, tester, { lockTimeoutMs: 30_000, barrier: barrier(0) }));
    const second = started(crossingOrderTransaction(y.id, x.id, tester, { lockTimeoutMs: 30_000, barrier: barrier(1) }));
    // Whatever happens, the two transactions are let go at the end (they hold rows the next test truncates).
    onTestFinished(async () => {
      for (const g of go) g.open();
      await Promise.allSettled([first, second]);
    });
    await Promise.all(arrived.map((a) => a.wait));
    // The second asks for x, which the first holds: an episode, the first its root.
    go[1].open();
    // (Postgres keeps 63 characters of an application name.)
    await waitForWaiters(1, { application: `bridge:replay_crossing_order:${y.id}`.slice(0, 63) });
    const [id] = (await s.tick()).opened;
    expect(id).toBeDefined();

    // A status change of x gives up after its lock timeout while the episode goes on.
    await expect(updateIntentStatus({ id: x.id, status: 'NORMALIZED' }, tester, { lockTimeoutMs: 50 })).rejects.toMatchObject({ code: 'lock_timeout' });
    await engineEventsWritten();
    expect((await s.tick()).continued).toEqual([id]);

    // The first now asks for y: a wait cycle, which Postgres breaks; the victim is retried and both commit.
    go[0].open();
    await Promise.all([first, second]);
    expect((await s.tick()).closed).toContain(id);

    const { links } = (await getEpisode({ id }))!;
    expect(links.lockTimeouts).toEqual([expect.objectContaining({ intentId: x.id, operation: 'update_status', count: 1 })]);
    expect(links.deadlocks).toHaveLength(1);
    expect([...links.deadlocks[0].intentIds].sort()).toEqual([x.id, y.id].sort());
  });
});

describe('lock timeouts belong to the blocking they happened in', () => {
  it('two blockings of one intent in the same minute each count their own, not the minute’s', async () => {
    const intent = await makeIntent();
    const s = sampler();
    const blocking = async (timeouts: number) => {
      const holder = await holdRowLocks([intent.id], 'psql');
      const queued = await queueFor(intent.id, 'psql-waiter');
      await waitForWaiters(1, { pids: [queued.s.pid] });
      const [id] = (await s.tick()).opened;
      expect(id).toBeDefined();
      for (let i = 0; i < timeouts; i++) {
        await expect(updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester, { lockTimeoutMs: 50 })).rejects.toMatchObject({ code: 'lock_timeout' });
      }
      await engineEventsWritten();
      await holder.release();
      await queued.done;
      expect((await s.tick()).closed).toEqual([id]);
      return id;
    };
    const first = await blocking(1);
    const second = await blocking(2);
    const counted = async (id: string) => (await getEpisode({ id }))!.links.lockTimeouts.reduce((n, t) => n + t.count, 0);
    expect(await counted(first)).toBe(1);
    expect(await counted(second)).toBe(2);
  });
});

describe('the unblock guard', () => {
  it('judges from the episode: a root whose waiter just gave up may still be terminated; one that never blocked may not', async () => {
    await resetAuth();
    const oncall = actorOf((await makeUser(['oncall'])).user, 'session');
    const intent = await makeIntent();
    const holder = await holdRowLocks([intent.id], 'psql');
    // In a transaction that wrote something, but holds no intent's row: it keeps nothing from anyone.
    const bystander = await holdRowLocks([], 'psql');
    await bystander.session.query('SELECT txid_current()');
    const queued = await queueFor(intent.id, 'api-retry');
    await waitForWaiters(1, { pids: [queued.s.pid] });
    const s = sampler();
    const [id] = (await s.tick()).opened;
    // The waiter runs out of patience (as a lock timeout would end it) and will retry a moment later: right now
    // nobody waits, which is what the guard used to judge by.
    await db().$queryRaw`SELECT pg_cancel_backend(${queued.s.pid}::int)`;
    await queued.done.catch(() => undefined);
    expect((await s.tick()).closed).toEqual([id]);

    const impact = await unblockImpact(holder.session.pid);
    expect(impact.waitingBehind).toBe(0);
    expect(impact.recentBlocking).toMatchObject({ episodeId: id, inProgress: false, waitersSeen: 1 });
    const result = await terminateBackend(oncall, { pid: holder.session.pid, reason: 'holds the row the API keeps retrying' });
    expect(result.signalled).toBe(true);

    expect((await unblockImpact(bystander.session.pid)).recentBlocking).toBeNull();
    await expect(terminateBackend(oncall, { pid: bystander.session.pid, reason: 'never blocked anyone at all' })).rejects.toBeInstanceOf(NotBlockingError);
  });
});

describe('one sampler per database', () => {
  it('samples with one leader at a time; killing its connection hands the episode in progress to the other, whole', async () => {
    const intent = await makeIntent();
    const one = sampler();
    const two = sampler();
    const roles = [await one.tick(), await two.tick()].map((t) => t.role);
    expect(roles.sort()).toEqual(['follower', 'leader']);
    const [leader, follower] = one.isLeader ? [one, two] : [two, one];

    const holder = await holdRowLocks([intent.id], 'psql');
    const queued = await queueFor(intent.id);
    await waitForWaiters(1, { pids: [queued.s.pid] });
    const [id] = (await leader.tick()).opened;
    expect(await follower.tick()).toMatchObject({ role: 'follower', sampled: false });

    // The leader's connection dies (a crash, a network cut): Postgres drops its advisory lock with it.
    await db().$queryRaw`SELECT pg_terminate_backend(${leader.leaderPid!}::int, 5000)`;
    const deadline = Date.now() + 15_000;
    let took = await follower.tick();
    while (took.role !== 'leader' && Date.now() < deadline) took = await follower.tick();
    expect(took.role).toBe('leader');
    // The new leader continued the episode in progress: not split, not duplicated.
    expect(took.opened).toEqual([]);
    expect(took.continued).toEqual([id]);
    // The old one finds its connection gone, and stands by.
    await leader.tick().catch(() => undefined);
    expect((await leader.tick()).role).toBe('follower');

    await holder.commit();
    await queued.done;
    expect((await follower.tick()).closed).toEqual([id]);
    const rows = await db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM lock_episodes`;
    expect(rows[0].n).toBe(1);
    expect((await getEpisode({ id }))!.samples).toBeGreaterThanOrEqual(2);
  });
});

describe('retention and masking', () => {
  /** An ended episode written directly, `daysAgo` days back, with an intent and a sample. */
  async function pastEpisode(daysAgo: number, query: string, intentId: string): Promise<string> {
    // Its day gets its partitions first (the episodes' and, following them, their samples' and intents').
    await db().$queryRaw`SELECT "bridge_partitions_cover"('lock_episodes'::regclass, now() - make_interval(days => ${daysAgo}::int) - interval '1 minute', now())::text`;
    const tree = { tree: [{ pid: 4242, waitingBehind: 1, children: [{ pid: 4343, waitingBehind: 0, children: [], hiddenChildren: 0 }], hiddenChildren: 0 }], backends: [{ pid: 4242, query }, { pid: 4343, query }] };
    const [row] = await db().$queryRaw<{ id: bigint; startedAt: Date }[]>`
      INSERT INTO lock_episodes (root_pid, root_backend_start, root_xact_start, started_at, last_seen_at, ended_at, peak_waiters, peak_at, peak_tree, root, waiters, intent_ids, applications)
      VALUES (4242, now() - make_interval(days => ${daysAgo}::int) - interval '1 hour', now() - make_interval(days => ${daysAgo}::int) - interval '1 minute',
              now() - make_interval(days => ${daysAgo}::int) - interval '10 seconds', now() - make_interval(days => ${daysAgo}::int), now() - make_interval(days => ${daysAgo}::int),
              1, now() - make_interval(days => ${daysAgo}::int), ${JSON.stringify(tree)}::jsonb,
              ${JSON.stringify({ pid: 4242, query, intents: [intentId] })}::jsonb, ${JSON.stringify([{ pid: 4343, query, intents: [intentId] }])}::jsonb,
              ARRAY[${intentId}::uuid], ARRAY['psql'])
      RETURNING id, started_at AS "startedAt"`;
    await db().$executeRaw`INSERT INTO lock_episode_samples (episode_id, episode_started_at, at, waiters, tree)
      VALUES (${row.id}, ${row.startedAt}, now() - make_interval(days => ${daysAgo}::int), 1, ${JSON.stringify(tree)}::jsonb)`;
    await db().$executeRaw`INSERT INTO lock_episode_intents (intent_id, episode_id, episode_started_at, role) VALUES (${intentId}::uuid, ${row.id}, ${row.startedAt}, 'root')`;
    return String(row.id);
  }

  it('retires the days of episodes older than the retention, with their samples and intents, and nothing else', async () => {
    const intent = await makeIntent();
    const old = await pastEpisode(20, 'SELECT 1', intent.id);
    const recent = await pastEpisode(3, 'SELECT 1', intent.id);
    await db().$executeRaw`INSERT INTO lock_episode_totals (le_ms, count, sum_ms) VALUES (10000, 2, 20000)`;
    const [{ day }] = await db().$queryRaw<{ day: string }[]>`SELECT tableoid::regclass::text AS day FROM lock_episodes WHERE id = ${old}::bigint`;
    const report = await maintainPartitions({ ...partitionPolicy('lock_episodes'), retentionDays: 14 });
    expect(report.retired).toEqual(expect.arrayContaining([day, day.replace('lock_episodes', 'lock_episode_samples'), day.replace('lock_episodes', 'lock_episode_intents')]));
    expect((await listEpisodes({})).items.map((e) => e.id)).toEqual([recent]);
    const left = await db().$queryRaw<{ samples: number; intents: number; totals: number; intentsLeft: number }[]>`
      SELECT (SELECT count(*)::int FROM lock_episode_samples WHERE episode_id = ${old}::bigint) AS samples,
             (SELECT count(*)::int FROM lock_episode_intents WHERE episode_id = ${old}::bigint) AS intents,
             (SELECT count::int FROM lock_episode_totals WHERE le_ms = 10000) AS totals,
             (SELECT count(*)::int FROM intents) AS "intentsLeft"`;
    expect(left[0]).toEqual({ samples: 0, intents: 0, totals: 2, intentsLeft: 1 });
    expect((await episodesForIntent(intent.id)).map((e) => e.id)).toEqual([recent]);
  });

  it('never shows a viewer the literals of a query, in the list or an episode', async () => {
    await resetAuth();
    const intent = await makeIntent();
    const id = await pastEpisode(1, "UPDATE intents SET payload = '{\"card\":\"4111-1111\"}' WHERE id = 42", intent.id);
    const viewer = await userWithToken(['viewer']);
    const oncall = await userWithToken(['oncall']);

    const viewerList = await (await listRoute(apiRequest('/api/locks/episodes', { headers: { authorization: viewer.authorization } }), undefined)).text();
    const viewerOne = await (await getRoute(apiRequest(`/api/locks/episodes/${id}`, { headers: { authorization: viewer.authorization } }), { params: Promise.resolve({ id }) })).text();
    for (const body of [viewerList, viewerOne]) {
      expect(body).not.toContain('4111');
      expect(body).toContain('UPDATE intents SET payload = ? WHERE id = ?');
    }
    const oncallOne = await (await getRoute(apiRequest(`/api/locks/episodes/${id}`, { headers: { authorization: oncall.authorization } }), { params: Promise.resolve({ id }) })).text();
    expect(oncallOne).toContain('4111-1111');
  });

  it('answers bad filters with 400 naming the field, and an unknown episode with 404', async () => {
    const viewer = await userWithToken(['viewer']);
    const headers = { authorization: viewer.authorization };
    for (const [query, field] of [['minDurationMs=-1', 'minDurationMs'], ['limit=0', 'limit'], ['intentId=x', 'intentId'], ['from=yesterday', 'from'], ['cursor=!!', 'cursor'], ['nope=1', 'nope'], ['from=2026-11-29T00:00:00Z&to=2026-11-28T00:00:00Z', 'to']] as const) {
      const res = await listRoute(apiRequest(`/api/locks/episodes?${query}`, { headers }), undefined);
      expect(res.status, query).toBe(400);
      expect(JSON.stringify(await res.json())).toContain(field);
    }
    expect((await getRoute(apiRequest('/api/locks/episodes/abc', { headers }), { params: Promise.resolve({ id: 'abc' }) })).status).toBe(400);
    expect((await getRoute(apiRequest('/api/locks/episodes/999', { headers }), { params: Promise.resolve({ id: '999' }) })).status).toBe(404);
    expect((await listRoute(apiRequest('/api/locks/episodes'), undefined)).status).toBe(401);
  });
});

describe('a 3-second blocking with two waiters, the sampler on its own timer', () => {
  it('is listed afterwards with its root, both waiters and the intent, its duration within a second', async () => {
    const intent = await makeIntent();
    const s = sampler();
    s.start();
    const holder = await holdRowLocks([intent.id], 'psql');
    const heldFrom = Date.now();
    const queued = [await queueFor(intent.id, 'api-a'), await queueFor(intent.id, 'api-b')];
    // The scenario is a blocking of three seconds: the holder keeps the row that long, whatever the sampler does.
    await new Promise((resolve) => setTimeout(resolve, 3000 - (Date.now() - heldFrom)));
    await holder.commit();
    const held = Date.now() - heldFrom;
    await Promise.all(queued.map((q) => q.done));

    // Wait for the sampler to record the end (an event in the database, not a time).
    const page = await eventually('the episode to end', async () => {
      const now = await listEpisodes({ intentId: intent.id });
      return now.items[0]?.endedAt ? now : undefined;
    }, { everyMs: 50 });
    expect(page.items).toHaveLength(1);
    const [episode] = page.items;
    expect(episode.root.pid).toBe(holder.session.pid);
    expect(episode.waiters.map((w) => w.pid).sort()).toEqual(queued.map((q) => q.s.pid).sort());
    expect(episode.intents.map((i) => i.id)).toContain(intent.id);
    expect(Math.abs(episode.durationMs - held)).toBeLessThanOrEqual(1000);
  });
});
