import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readAfterCookieName } from '@/lib/auth/cookies';
import { disconnectDb } from '@/lib/db/client';
import { closeReadReplicas, commitPosition, useReadReplicas } from '@/lib/db/read';
import { apiRoute } from '@/lib/http/api-router';
import { parseLsn } from '@/lib/db/lsn';
import { stopLiveHub } from '@/lib/live/hub';
import { liveEventStream } from '@/lib/live/stream';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { apiRequest, resetAuth, userWithSession, userWithToken } from '../auth-helpers';
import { startReplicaPair, type ReplicaPair } from '../replica-pair';
import { eventually } from '../wait';

/**
 * Reads from a streaming replica with read-your-writes, against a primary and a hot standby of its own
 * (test/replica-pair.ts). The replica's replay is paused and resumed by SQL (pg_wal_replay_pause/resume), so "the
 * replica is behind" is a state the test sets, not a race it hopes to win.
 */
let pair: ReplicaPair;
let workerUrl: string | undefined;
let replica: string;
let author: { token: string };
let other: { token: string };

const { POST: create } = apiRoute('/api/intents');
const { GET: getOne } = apiRoute('/api/intents/{id}');
const { POST: changeStatus } = apiRoute('/api/intents/{id}/status');
const { GET: ready } = apiRoute('/api/ready');
const { GET: workers } = apiRoute('/api/workers');

type Caller = { token?: string; cookie?: string; headers?: Record<string, string> };
type Answer = { status: number; body: any; headers: Headers }; // eslint-disable-line @typescript-eslint/no-explicit-any

async function call(route: (r: Request) => Promise<Response>, path: string, caller: Caller, body?: unknown): Promise<Answer> {
  const response = await route(apiRequest(path, { method: body === undefined ? 'GET' : 'POST', body, ...caller }));
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

const read = (id: string, caller: Caller) => call(getOne, `/api/intents/${id}`, caller);
const replicaState = async () => (await call(ready, '/api/ready', {})).body.replicas?.[0];

async function pauseReplay(): Promise<void> {
  await pair.replica.query('SELECT pg_wal_replay_pause()');
  await eventually('the replica to pause its replay', async () => (await pair.replica.query("SELECT pg_get_wal_replay_pause_state() = 'paused' AS paused")).rows[0].paused);
}

async function resumeReplay(): Promise<void> {
  await pair.replica.query('SELECT pg_wal_replay_resume()');
}

type LiveChange = { intentId: string | null; toStatus: string | null; lsn: string };

/** Opens the live event stream and collects its `changes` events' entries as they come (what a console tab listens to). */
async function openLiveStream(): Promise<{ changes: LiveChange[]; close: () => void }> {
  const controller = new AbortController();
  const response = await liveEventStream(null, controller.signal);
  const changes: LiveChange[] = [];
  void (async () => {
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const lines = buffer.slice(0, end).split('\n');
          buffer = buffer.slice(end + 2);
          if (!lines.includes('event: changes')) continue;
          const data = lines.find((l) => l.startsWith('data: '))!.slice('data: '.length);
          changes.push(...(JSON.parse(data) as { events: LiveChange[] }).events);
        }
      }
    } catch {
      // aborted
    }
  })();
  return { changes, close: () => controller.abort() };
}

/** An intent the replica has already replayed, so a read of it can be served there. */
async function replicatedIntent(): Promise<string> {
  const created = await call(create, '/api/intents', author, { payload: { order: 'R-1' }, source: 'replica-test' });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  await eventually('the replica to serve the new intent', async () => {
    const seen = await read(id, other);
    return seen.status === 200 && seen.headers.get('bridge-read-source') === replica;
  });
  return id;
}

beforeAll(async () => {
  pair = await startReplicaPair();
  await disconnectDb();
  workerUrl = process.env.DATABASE_URL;
  process.env.DATABASE_URL = pair.primaryUrl;
  replica = 'replica-1';
  await resetAuth();
  author = await userWithToken(['operator']);
  other = await userWithToken(['operator']);
}, 180_000);

beforeEach(async () => {
  await resumeReplay();
  await useReadReplicas([pair.replicaUrl], { maxLagMs: 60_000, pollMs: 20 });
});

afterAll(async () => {
  await resumeReplay().catch(() => undefined);
  await closeReadReplicas();
  await stopLiveHub();
  await flushOutcomes().catch(() => undefined);
  await disconnectDb();
  process.env.DATABASE_URL = workerUrl;
  await pair?.stop();
});

describe('reads from a replica', () => {
  it('with the replica paused, a command’s author reads their change (from the primary); another reader reads the replica’s older state and sees its lag', async () => {
    const id = await replicatedIntent();
    await pauseReplay();

    const changed = await call(changeStatus, `/api/intents/${id}/status`, author, { status: 'NORMALIZED' });
    expect(changed.status).toBe(200);
    const lsn = changed.headers.get('bridge-commit-lsn');
    expect(lsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);

    const mine = await read(id, author);
    expect(mine.body.status).toBe('NORMALIZED');
    expect(mine.headers.get('bridge-read-source')).toBe('primary');

    const theirs = await read(id, other);
    expect(theirs.body.status).toBe('RECEIVED');
    expect(theirs.headers.get('bridge-read-source')).toBe(replica);

    // A client of the other token that echoes the position it was given is served the present too.
    const echoed = await read(id, { ...other, headers: { 'Bridge-Read-After': lsn! } });
    expect(echoed.body.status).toBe('NORMALIZED');
    expect(echoed.headers.get('bridge-read-source')).toBe('primary');

    const lagging = await eventually('the replica’s lag to show on /api/ready', async () => {
      const state = await replicaState();
      return state.lagBytes > 0 && state.lagMs > 0 && state;
    });
    expect(lagging).toMatchObject({ name: replica, inRotation: true, problem: null });

    await resumeReplay();
    const caughtUp = await eventually('the author to be served by the replica again', async () => {
      const again = await read(id, author);
      return again.headers.get('bridge-read-source') === replica && again;
    });
    expect(caughtUp.body.status).toBe('NORMALIZED');
    expect(await replicaState()).toMatchObject({ inRotation: true });
  });

  it('a browser session’s command sets the read-after cookie, and the session’s reads honour it', async () => {
    const person = await userWithSession(['operator']);
    const id = await replicatedIntent();
    await pauseReplay();

    const changed = await call(changeStatus, `/api/intents/${id}/status`, { cookie: person.cookie }, { status: 'NORMALIZED' });
    expect(changed.status).toBe(200);
    const setCookie = changed.headers.get('set-cookie') ?? '';
    expect(setCookie).toContain(`${readAfterCookieName()}=`);
    const readAfter = setCookie.split(';')[0];

    const mine = await read(id, { cookie: `${person.cookie}; ${readAfter}` });
    expect(mine.body.status).toBe('NORMALIZED');
    expect(mine.headers.get('bridge-read-source')).toBe('primary');
    // The same session without the cookie (another browser of the same person) has no command to wait for.
    const elsewhere = await read(id, { cookie: person.cookie });
    expect(elsewhere.body.status).toBe('RECEIVED');
    expect(elsewhere.headers.get('bridge-read-source')).toBe(replica);
  });

  it('takes a replica further behind than the max lag out of rotation until it catches up', async () => {
    await useReadReplicas([pair.replicaUrl], { maxLagMs: 200, pollMs: 20 });
    const id = await replicatedIntent();
    await pauseReplay();
    await call(changeStatus, `/api/intents/${id}/status`, author, { status: 'NORMALIZED' });

    const out = await eventually('the replica to leave the rotation', async () => {
      const state = await replicaState();
      return !state.inRotation && state;
    });
    expect(out.lagMs).toBeGreaterThan(200);
    expect(out.problem).toContain('READ_REPLICA_MAX_LAG_MS');
    // The Workers page shows the same, from the same answer it polls anyway.
    const overview = await call(workers, '/api/workers', other);
    expect(overview.body.replicas).toEqual([expect.objectContaining({ name: replica, host: pair.replicaUrl.replace(/^.*@/, ''), inRotation: false })]);
    expect(overview.headers.get('bridge-read-source')).toBe('primary');
    const theirs = await read(id, other);
    expect(theirs.headers.get('bridge-read-source')).toBe('primary');
    expect(theirs.body.status).toBe('NORMALIZED');

    await resumeReplay();
    await eventually('the replica to come back into rotation', async () => (await replicaState()).inRotation);
    await eventually('the other reader to be served by the replica again', async () => (await read(id, other)).headers.get('bridge-read-source') === replica);
  });

  it('with no read URL, every read runs on the primary as before: no position asked, no header, no replicas on /api/ready', async () => {
    await useReadReplicas([]);
    const created = await call(create, '/api/intents', author, { payload: { order: 'P-1' }, source: 'replica-test' });
    expect(created.headers.get('bridge-commit-lsn')).toBeNull();
    expect(await commitPosition()).toBeNull();
    const seen = await read(created.body.id, other);
    expect(seen.body.id).toBe(created.body.id);
    expect(seen.headers.get('bridge-read-source')).toBeNull();
    const readiness = await call(ready, '/api/ready', {});
    expect(readiness.body).not.toHaveProperty('replicas');
    expect((await call(workers, '/api/workers', other)).body.replicas).toEqual([]);
  });

  it('a live event carries its change’s WAL position: a refetch that echoes it reads the change while the replica has not replayed it (from the primary), and the replica again once it has', async () => {
    const id = await replicatedIntent();
    const stream = await openLiveStream();
    try {
      await pauseReplay();
      const changed = await call(changeStatus, `/api/intents/${id}/status`, author, { status: 'NORMALIZED' });
      expect(changed.status).toBe(200);
      const event = await eventually('the change to arrive on the live stream', () => stream.changes.find((c) => c.intentId === id && c.toStatus === 'NORMALIZED'));
      expect(event.lsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
      // The paused replica has not replayed that far: that is what sends the refetch to the primary.
      const replayed = (await pair.replica.query<{ lsn: string }>('SELECT pg_last_wal_replay_lsn()::text AS lsn')).rows[0].lsn;
      expect(parseLsn(event.lsn)! > parseLsn(replayed)!).toBe(true);

      // Another viewer, told of the change by the event, refetches with its position: served the change, by the primary.
      const refetch = await read(id, { ...other, headers: { 'Bridge-Read-After': event.lsn } });
      expect(refetch.body.status).toBe('NORMALIZED');
      expect(refetch.headers.get('bridge-read-source')).toBe('primary');
      // Without it (what a page did before events carried positions) the replica answers with the state before the change.
      const blind = await read(id, other);
      expect(blind.body.status).toBe('RECEIVED');
      expect(blind.headers.get('bridge-read-source')).toBe(replica);

      await resumeReplay();
      const back = await eventually('the event’s refetch to be served by the replica again', async () => {
        const again = await read(id, { ...other, headers: { 'Bridge-Read-After': event.lsn } });
        return again.headers.get('bridge-read-source') === replica && again;
      });
      expect(back.body.status).toBe('NORMALIZED');
    } finally {
      stream.close();
    }
  });
});
