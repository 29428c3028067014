import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatabaseUnderPressureError } from '@/lib/shared/errors';
import { takeLocksSnapshot } from '@/lib/locks/queries';
import type { Backend, BlockingNode, LocksSnapshot } from '@/lib/locks/types';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { pipelineLockLabel, withPipelineLock } from '@/lib/pipeline/lock';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { makeIntent, rawClient, resetDatabase, tester } from '../helpers';
import { waitForWaiters } from '../barriers';
import { apiRoute } from '@/lib/http/api-router';

const { GET } = apiRoute('/api/locks');

/**
 * The Locks snapshot against real lock states: a row held by one plain connection, waiters queued behind it
 * (labelled by the engine, or not labelled at all, like a person's psql), and a table lock that makes the
 * snapshot's own lock_timeout fire.
 */
const clients: pg.Client[] = [];
const pending: Promise<unknown>[] = [];

async function client(name: string): Promise<pg.Client & { pid: number }> {
  const c = await rawClient(name);
  clients.push(c);
  const [{ pid }] = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
  return Object.assign(c, { pid });
}

/** Starts a statement that will block; its outcome is kept so the test can await it (or ignore it) later. */
function start<T>(promise: Promise<T>): Promise<T> {
  const settled = promise.catch((err) => err);
  pending.push(settled);
  return promise;
}

function findNode(nodes: BlockingNode[], pid: number): BlockingNode | undefined {
  for (const n of nodes) {
    if (n.pid === pid) return n;
    const inner = findNode(n.children, pid);
    if (inner) return inner;
  }
  return undefined;
}
const backend = (s: LocksSnapshot, pid: number): Backend => {
  const b = s.backends.find((x) => x.pid === pid);
  if (!b) throw new Error(`backend ${pid} not in snapshot`);
  return b;
};

beforeEach(async () => {
  await resetDatabase();
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => undefined);
  await Promise.all(pending.splice(0));
});

describe('locks snapshot', () => {
  it('shows the holder as root blocker with an unlabelled waiter, both tied to the intent through the row (ctid)', async () => {
    const intent = await makeIntent();
    const holder = await client('bridge-test:holder');
    const psql = await client('psql');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    start(psql.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]));
    await waitForWaiters(1);

    const snap = await takeLocksSnapshot();
    const root = snap.tree.find((n) => n.pid === holder.pid);
    expect(root, 'holder is a root blocker').toBeDefined();
    expect(root!.waitingBehind).toBe(1);
    expect(root!.children.map((c) => c.pid)).toEqual([psql.pid]);

    expect(backend(snap, psql.pid).blockedBy).toEqual([holder.pid]);
    expect(backend(snap, psql.pid).waitingSince).not.toBeNull();
    expect(backend(snap, psql.pid).intents).toEqual([{ id: intent.id, via: 'row-waits' }]);
    expect(backend(snap, holder.pid).intents).toEqual([{ id: intent.id, via: 'row-holds' }]);

    // The waiter's granted tuple lock names the row; its ungranted ShareLock is on the holder's transaction id.
    const tuple = snap.locks.find((l) => l.pid === psql.pid && l.lockType === 'tuple');
    expect(tuple).toMatchObject({ relation: 'intents', granted: true, intentId: intent.id, applicationName: 'psql' });
    const wait = snap.locks.find((l) => l.pid === psql.pid && !l.granted);
    expect(wait).toMatchObject({ lockType: 'transactionid', mode: 'ShareLock' });
    expect(wait!.waitingSince).not.toBeNull();
    const holderXid = snap.locks.find((l) => l.pid === holder.pid && l.lockType === 'transactionid' && l.granted);
    expect(holderXid?.transactionId).toBe(wait!.transactionId);
    // Waits are listed first.
    expect(snap.locks[0].granted).toBe(false);
    expect(snap.summary.waiting).toBeGreaterThanOrEqual(1);

    await holder.query('ROLLBACK');
  });

  it('names the intent from the engine label, and chains later waiters behind the first (queue order)', async () => {
    const intent = await makeIntent();
    const holder = await client('bridge-test:holder');
    const psql = await client('psql');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    start(psql.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]));
    await waitForWaiters(1);
    const engine = start(updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester));
    await waitForWaiters(2);

    const snap = await takeLocksSnapshot();
    const engineBackend = snap.backends.find((b) => b.applicationName === `bridge:update_status:${intent.id}`);
    expect(engineBackend, 'the engine labelled its backend').toBeDefined();
    expect(engineBackend!.operation).toBe('update_status');
    expect(engineBackend!.intents[0]).toEqual({ id: intent.id, via: 'label' });
    // The later waiter waits on the first waiter's tuple lock, so pg_blocking_pids names the first waiter.
    expect(engineBackend!.blockedBy).toEqual([psql.pid]);
    const root = findNode(snap.tree, holder.pid)!;
    expect(root.waitingBehind).toBe(2);
    expect(findNode(root.children, psql.pid)!.children.map((c) => c.pid)).toEqual([engineBackend!.pid]);

    await holder.query('ROLLBACK');
    await psql.query('SELECT 1'); // its row lock was granted and its autocommit statement ended
    expect((await engine).intent.status).toBe('NORMALIZED');
  });

  it('names the console user an engine backend acts for, while it waits behind a held lock, and not for other sessions', async () => {
    const intent = await makeIntent();
    const holder = await client('bridge-test:holder');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    // Two people act on the same intent through the engine: each backend waits, each named for its person.
    const alice = start(updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, { name: 'alice' }));
    await waitForWaiters(1);
    const bob = start(reevaluateIntent({ id: intent.id, diff: { checked: true }, source: 't', reason: 'r' }, { name: 'bob.k' }, { strategy: 'pessimistic' }));
    await waitForWaiters(2);

    const snap = await takeLocksSnapshot();
    const byOperation = (op: string) => snap.backends.find((b) => b.operation === op)!;
    expect(byOperation('update_status')).toMatchObject({ actor: 'alice', intents: [{ id: intent.id, via: 'label' }] });
    expect(byOperation('reevaluate')).toMatchObject({ actor: 'bob.k' });
    // The holder is someone's psql: no console user behind it.
    expect(backend(snap, holder.pid).actor).toBeNull();
    // The locks that carry the names block nobody and are not listed among the locks.
    expect(snap.locks.filter((l) => l.lockType === 'advisory')).toEqual([]);

    await holder.query('ROLLBACK');
    expect((await alice).intent.status).toBe('NORMALIZED');
    expect((await bob).alreadyApplied).toBe(false);
  });

  it('names the user a pipeline run is for, as long as the run holds its execution lock', async () => {
    const intent = await makeIntent();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const run = start(
      withPipelineLock(
        intent.id,
        async () => {
          entered();
          await held;
        },
        'carol',
      ),
    );
    await inside;
    const snap = await takeLocksSnapshot();
    expect(snap.backends.find((b) => b.applicationName === pipelineLockLabel(intent.id))).toMatchObject({ actor: 'carol', operation: 'pipeline_execute' });
    release();
    await run;
  });

  it('caps the lock list at the top N and summarises the rest by lock type', async () => {
    const intents = await Promise.all([1, 2, 3, 4, 5].map(() => makeIntent()));
    const holder = await client('bridge-test:holder');
    await holder.query('BEGIN');
    for (const i of intents) await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [i.id]);
    await holder.query('LOCK TABLE corrections IN SHARE MODE');
    const psql = await client('psql');
    start(psql.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intents[0].id]));
    await waitForWaiters(1);

    const full = await takeLocksSnapshot({ limit: 1000 });
    const capped = await takeLocksSnapshot({ limit: 3 });
    expect(capped.locks).toHaveLength(3);
    expect(capped.summary.shown).toBe(3);
    expect(capped.summary.total).toBeGreaterThan(3);
    expect(capped.summary.hidden).toBe(capped.summary.total - 3);
    expect(capped.summary.hiddenByType.reduce((n, h) => n + h.count, 0)).toBe(capped.summary.hidden);
    // The wait comes first, then the blocker's locks.
    expect(capped.locks[0]).toMatchObject({ pid: psql.pid, granted: false });
    expect(capped.locks.slice(1).every((l) => l.pid === holder.pid)).toBe(true);
    expect(full.locks.some((l) => l.pid === holder.pid && l.relation === 'corrections' && l.mode === 'ShareLock')).toBe(true);
    expect(full.summary.hidden).toBe(0);

    await holder.query('ROLLBACK');
  });

  it('leaves the console’s own concurrent snapshot transactions out of what it shows', async () => {
    const other = await client('bridge-test:other-tab');
    await other.query('BEGIN');
    await other.query(`SELECT set_config('application_name', 'bridge:locks-snapshot', true)`);
    await other.query('SELECT count(*) FROM pg_locks');
    const snap = await takeLocksSnapshot({ limit: 1000 });
    expect(snap.backends.some((b) => b.pid === other.pid)).toBe(false);
    expect(snap.locks.some((l) => l.pid === other.pid)).toBe(false);
    await other.query('ROLLBACK');
  });

  it('leaves the lock history sampler’s own transactions out, unless it blocks someone or every session is asked for', async () => {
    const intent = await makeIntent();
    const sampler = await client('bridge:lock-sampler');
    await sampler.query('BEGIN');
    await sampler.query('SELECT count(*) FROM lock_episodes');
    const quiet = await takeLocksSnapshot({ limit: 1000 });
    expect(quiet.backends.some((b) => b.pid === sampler.pid)).toBe(false);
    expect(quiet.locks.some((l) => l.pid === sampler.pid)).toBe(false);
    const every = await takeLocksSnapshot({ limit: 1000, all: 'true' });
    expect(every.backends.some((b) => b.pid === sampler.pid)).toBe(true);
    expect(every.locks.some((l) => l.pid === sampler.pid && l.relation === 'lock_episodes')).toBe(true);

    // Holding a row someone waits for, it is shown as anyone else would be.
    await sampler.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    const waiter = await client('bridge-test:waiter');
    start(waiter.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]));
    await waitForWaiters(1);
    const blocking = await takeLocksSnapshot({ limit: 1000 });
    expect(findNode(blocking.tree, sampler.pid)?.children.map((c) => c.pid)).toEqual([waiter.pid]);
    expect(blocking.locks.some((l) => l.pid === sampler.pid && l.granted)).toBe(true);
    await sampler.query('ROLLBACK');
  });

  it('gives up within its lock timeout when the database is jammed, as db_under_pressure', async () => {
    const intent = await makeIntent();
    const holder = await client('bridge-test:holder');
    const psql = await client('psql');
    const ddl = await client('bridge-test:ddl');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    start(psql.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]));
    await waitForWaiters(1);
    // Queued ACCESS EXCLUSIVE: every new reader of `intents` (the snapshot's ctid lookup too) now waits behind it.
    await ddl.query('BEGIN');
    start(ddl.query('LOCK TABLE intents IN ACCESS EXCLUSIVE MODE'));
    await waitForWaiters(2);

    // The jam is still there (the holder and the DDL are let go only at the end): an answer at all is the proof that
    // the snapshot gave up by its own lock timeout instead of waiting behind the DDL.
    const err = await takeLocksSnapshot().catch((e) => e);
    expect(err).toBeInstanceOf(DatabaseUnderPressureError);
    expect(err.reason).toBe('lock_timeout');

    const { authorization } = await userWithToken(['viewer']);
    const res = await GET(apiRequest('/api/locks', { headers: { authorization } }), undefined);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('10');
    expect((await res.json()).error.code).toBe('db_under_pressure');

    await holder.query('ROLLBACK');
  });
});

describe('GET /api/locks', () => {
  beforeEach(async () => {
    await resetAuth();
  });

  it('answers 200 with locks, tree and summary for a reader; 401 without credentials; 400 for a bad limit', async () => {
    const { authorization } = await userWithToken(['viewer']);
    const ok = await GET(apiRequest('/api/locks?limit=5', { headers: { authorization } }), undefined);
    expect(ok.status).toBe(200);
    const body = await ok.json();
    expect(body).toMatchObject({ limit: 5, summary: expect.any(Object), tree: expect.any(Array), locks: expect.any(Array) });
    expect((await GET(apiRequest('/api/locks'), undefined)).status).toBe(401);
    expect((await GET(apiRequest('/api/locks?limit=0', { headers: { authorization } }), undefined)).status).toBe(400);
  });
});
