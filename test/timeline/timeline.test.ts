import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { OutboxRelay } from '@/lib/events/relay';
import { createIntent, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { engineEventsWritten } from '@/lib/intents/engine-events';
import { LockTimeoutError, VersionConflictError } from '@/lib/intents/errors';
import { editLeaseResource } from '@/lib/leases/edit-names';
import { FencingTokenStaleError, LeaseDeniedError } from '@/lib/leases/errors';
import { acquireLease, releaseLease, sweepLeases } from '@/lib/leases/service';
import { LockSampler, samplerConfigFromEnv } from '@/lib/locks/history/sampler';
import { terminateBackend } from '@/lib/locks/unblock';
import { PIPELINE_LOCK_NAMESPACE } from '@/lib/pipeline/lock';
import { runPipeline } from '@/lib/pipeline/run';
import { getIntentTimeline } from '@/lib/timeline/timeline';
import { TIMELINE_KINDS, type TimelineEntry } from '@/lib/timeline/types';
import { actorOf, apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { closeSession, holdRowLocks, session, started, waitForLockWaitOf, waitForWaiters } from '../barriers';
import { resetDatabase } from '../helpers';
import { natsMode, startTestNats, type TestNats } from '../nats';
import { eventually } from '../wait';
import { apiRoute } from '@/lib/http/api-router';

const { GET: getTimeline } = apiRoute('/api/intents/{id}/timeline');

/**
 * The intent timeline, for an intent that went through every kind of thing it shows, each made by the real
 * engine, lease manager, pipeline and unblock guard: real held locks give a real lock wait (an operator's
 * terminate lets the waiter through) and a real lock timeout; a held execution lock gives a NOWAIT refusal. Then
 * the timeline must show each kind, in the order it was written, and page through the same list.
 */
const alice = { name: 'alice' };
/** A reviewer as the lease service sees one: edit leases are bound to the user that took them. */
const reviewerLeaseActor = (name: string) => ({ name, userId: `user-${name}`, roles: ['reviewer' as const], via: 'session' as const, credentialId: `session-${name}` });
const bob = { name: 'bob' };

let nats: TestNats | undefined;
let id: string;
let holderPid = 0;
let timeoutHolderPid = 0;
let items: TimelineEntry[] = [];

/** Resolves once the engine's waiting command has waited at least twice the recorded minimum. */
async function waitUntilWaitIsRecordable(application: string) {
  const [{ floor }] = await db().$queryRaw<{ floor: number }[]>`SELECT bridge_lock_wait_floor_ms() AS floor`;
  await waitForLockWaitOf(application, floor * 2);
}


beforeAll(async () => {
  await resetDatabase();
  await resetAuth();
  const oncall = actorOf((await userWithToken(['oncall'])).user);
  const resource = () => editLeaseResource(id);

  id = (await createIntent({ payload: { order: 'T-1' }, source: 'timeline-test' }, alice)).id;

  // A reviewer's edit lease, and a second reviewer refused it.
  const first = await acquireLease(resource(), { owner: 'alice', ttlMs: 60_000 }, reviewerLeaseActor('alice'));
  await expect(acquireLease(resource(), { owner: 'bob', ttlMs: 60_000 }, reviewerLeaseActor('bob'))).rejects.toBeInstanceOf(LeaseDeniedError);

  // A fenced write accepted.
  await updateIntentStatus({ id, status: 'NORMALIZED', reason: 'checked by hand', fencing: { resource: resource(), token: first.token } }, alice);

  // A real lock wait: a session idle in its transaction holds the row, the engine waits behind it, on-call
  // terminates the session (an unblock), and the waiter gets the lock.
  // The lock history's sampler sees it as a blocking episode (stepped by hand: one look while the engine waits,
  // one after, which ends the episode).
  const sampler = new LockSampler(samplerConfigFromEnv(), process.env.DATABASE_URL!, () => undefined);
  const holder = await holdRowLocks([id]);
  holder.session.on('error', () => undefined); // terminated below: its connection reports an error event
  holderPid = holder.session.pid;
  try {
    expect((await sampler.tick()).role).toBe('leader');
    const waiting = started(updateIntentStatus({ id, status: 'PROCESSED', reason: 'normalised' }, bob));
    await waitForWaiters(1, { application: `bridge:update_status:${id}` });
    await waitUntilWaitIsRecordable(`bridge:update_status:${id}`);
    expect((await sampler.tick()).opened).toHaveLength(1);
    await terminateBackend(oncall, { pid: holderPid, reason: 'psql session left open on the intent' });
    await waiting;
    expect((await sampler.tick()).closed).toHaveLength(1);
  } finally {
    await sampler.stop();
  }
  await closeSession(holder.session);

  // A real lock timeout: the row held again, the engine gives up after its lock timeout.
  const again = await holdRowLocks([id]);
  timeoutHolderPid = again.session.pid;
  await expect(updateIntentStatus({ id, status: 'FAILED', reason: 'give up' }, bob, { lockTimeoutMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
  await engineEventsWritten();
  await again.release();

  // A conflict: acted on a version that moved on.
  await expect(updateIntentStatus({ id, status: 'COMPLETED', expectedVersion: 0 }, bob)).rejects.toBeInstanceOf(VersionConflictError);

  // A correction with an idempotency key, and its repeat.
  const correction = { id, diff: { amount: 12 }, source: 'review', reason: 'amount was wrong', idempotencyKey: 'timeline-fix-1' };
  await reevaluateIntent(correction, alice);
  await reevaluateIntent(correction, alice);
  await engineEventsWritten();

  // The lease passes to bob; alice's old token is refused.
  await releaseLease(resource(), { owner: 'alice', token: first.token }, reviewerLeaseActor('alice'));
  await acquireLease(resource(), { owner: 'bob', ttlMs: 60_000 }, reviewerLeaseActor('bob'));
  await expect(updateIntentStatus({ id, status: 'COMPLETED', fencing: { resource: resource(), token: first.token } }, alice)).rejects.toBeInstanceOf(FencingTokenStaleError);
  await engineEventsWritten();

  // The pipeline refused at once while another execution holds its lock, then run.
  const execution = await session('bridge-test:pipeline-holder');
  await execution.query('BEGIN');
  await execution.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [PIPELINE_LOCK_NAMESPACE, id]);
  await expect(runPipeline({ id }, alice)).rejects.toBeInstanceOf(LockTimeoutError);
  await engineEventsWritten();
  await execution.query('ROLLBACK');
  await closeSession(execution);
  await runPipeline({ id }, alice);

  // Bob's lease runs out (its end moved into the past by the database's clock) and the sweep records it.
  await db().$executeRaw`UPDATE leases SET expires_at = now() - interval '1 second' WHERE resource = ${resource()}`;
  await sweepLeases();

  // Events out, acknowledged by JetStream when a NATS server is at hand.
  if (natsMode) {
    nats = await startTestNats();
    const relay = new OutboxRelay({ databaseUrl: process.env.DATABASE_URL!, natsUrl: nats.url, pollMs: 50, publishTimeoutMs: 2_000, maxBackoffMs: 300, log: () => undefined }).start();
    try {
      await eventually('the outbox to drain', async () => {
        const [row] = await db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM outbox_events WHERE published_at IS NULL`;
        return row.n === 0;
      });
    } finally {
      await relay.stop();
    }
  }

  items = (await getIntentTimeline(id)).items;
}, 120_000);

afterAll(async () => {
  await nats?.dispose();
});

const firstIndex = (pred: (e: TimelineEntry) => boolean, what: string) => {
  const i = items.findIndex(pred);
  expect(i, `${what} is on the timeline`).toBeGreaterThanOrEqual(0);
  return i;
};
const d = (e: TimelineEntry) => e.details as Record<string, unknown>;

describe('the intent timeline', () => {
  it('has every kind of history the intent went through', () => {
    const kinds = new Set(items.map((e) => e.kind));
    for (const kind of TIMELINE_KINDS.filter((k) => k !== 'other')) expect(kinds, kind).toContain(kind);
    expect(items.filter((e) => e.kind === 'lease').map((e) => d(e).event)).toEqual(['acquired', 'denied', 'released', 'acquired', 'expired']);
    // In the words of what the lease is for, the resource's name kept in the details; a denial names the holder.
    const leases = items.filter((e) => e.kind === 'lease').map((e) => e.summary);
    expect(leases[0]).toMatch(/^Edit lease granted \(token \d+\)$/);
    expect(leases[1]).toBe('Edit lease denied: held by alice');
    expect(items.filter((e) => e.kind === 'fenced_write').map((e) => d(e).accepted)).toEqual([true, false]);
    expect(items.filter((e) => e.kind === 'lock_timeout').map((e) => d(e).outcome)).toEqual(['timed_out', 'refused']);
    for (const e of items) expect(e.link).toMatch(/^\//);
  });

  it('is in the order things were written: positions never go back, and each milestone follows the one before', () => {
    const seqs = items.map((e) => e.position).filter((p) => p.startsWith('w')).map((p) => BigInt(p.slice(1)));
    expect(seqs.length).toBe(items.length);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i] >= seqs[i - 1], `${items[i].kind} after ${items[i - 1].kind}`).toBe(true);

    const milestones = [
      firstIndex((e) => e.kind === 'created', 'created'),
      firstIndex((e) => e.kind === 'lease' && d(e).event === 'acquired', 'lease granted'),
      firstIndex((e) => e.kind === 'lease' && d(e).event === 'denied', 'lease denied'),
      firstIndex((e) => e.kind === 'fenced_write' && d(e).accepted === true, 'fenced write accepted'),
      firstIndex((e) => e.kind === 'status_change' && d(e).to === 'NORMALIZED', 'status NORMALIZED'),
      firstIndex((e) => e.kind === 'lock_wait', 'lock wait'),
      firstIndex((e) => e.kind === 'status_change' && d(e).to === 'PROCESSED', 'status PROCESSED'),
      firstIndex((e) => e.kind === 'lock_timeout' && d(e).outcome === 'timed_out', 'lock timeout'),
      firstIndex((e) => e.kind === 'conflict', 'conflict'),
      firstIndex((e) => e.kind === 'correction', 'correction'),
      firstIndex((e) => e.kind === 'idempotent_repeat', 'idempotent repeat'),
      firstIndex((e) => e.kind === 'fenced_write' && d(e).accepted === false, 'fenced write refused'),
      firstIndex((e) => e.kind === 'lock_timeout' && d(e).outcome === 'refused', 'pipeline refused (NOWAIT)'),
      firstIndex((e) => e.kind === 'pipeline_run' && d(e).phase === 'started', 'pipeline run started'),
      firstIndex((e) => e.kind === 'pipeline_step', 'pipeline step'),
      firstIndex((e) => e.kind === 'pipeline_run' && d(e).phase === 'finished', 'pipeline run finished'),
      firstIndex((e) => e.kind === 'lease' && d(e).event === 'expired', 'lease expired'),
    ];
    expect(milestones).toEqual([...milestones].sort((a, b) => a - b));
    // The unblock is written by the statement that sends the signal, after it: the waiter it let through may
    // commit its change first. Either way it comes after what happened before the holder took the row, and
    // before what happened after the waiter was through.
    const unblock = firstIndex((e) => e.kind === 'unblock', 'unblock');
    expect(unblock).toBeGreaterThan(milestones[4]);
    expect(unblock).toBeLessThan(milestones[7]);

    // Within one transaction: the fenced write's acceptance, then the write, then the event it sent out.
    const normalized = milestones[4];
    expect(items[normalized - 1].kind).toBe('fenced_write');
    expect(items[normalized + 1]).toMatchObject({ kind: 'event_out', details: { subject: 'evt.intent.status_changed' } });
    // The wait recorded right before the status change it delayed, in the same transaction (the unblock, written by
    // another transaction while this one ran, may fall between the two).
    expect(items.slice(0, milestones[6]).filter((e) => e.kind !== 'unblock').at(-1)?.kind).toBe('lock_wait');
    // The blocking episode the sampler saw: before the change it delayed, after what came before the holder took the row.
    const episode = firstIndex((e) => e.kind === 'lock_episode', 'blocking episode');
    expect(episode).toBeGreaterThan(milestones[4]);
    expect(episode).toBeLessThan(milestones[6]);
    expect(items[episode]).toMatchObject({ link: expect.stringMatching(/^\/locks\?episode=\d+$/), details: { role: 'root', rootPid: holderPid, peakWaiters: 1 } });
    // Who held the row, found on the Locks page by its pid, and who waited behind it: in the words an on-call reads.
    expect(items[episode].summary).toMatch(
      new RegExp(
        `^Others waited [\\d.]+ (ms|s) for its row, held by backend ${holderPid} \\(bridge-test:holder, idle in transaction\\), in a transaction open since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC; 1 waiting at the peak: bob \\(update_status\\)$`,
      ),
    );
  });

  it('says how long the engine waited and who held the lock', async () => {
    const [{ floor }] = await db().$queryRaw<{ floor: number }[]>`SELECT bridge_lock_wait_floor_ms() AS floor`;
    const wait = items.find((e) => e.kind === 'lock_wait')!;
    expect(wait).toMatchObject({ actor: 'bob', details: { operation: 'update_status', outcome: 'acquired' } });
    expect(d(wait).waitedMs as number).toBeGreaterThanOrEqual(floor);
    const timeout = items.find((e) => e.kind === 'lock_timeout' && d(e).outcome === 'timed_out')!;
    expect(timeout).toMatchObject({ actor: 'bob', details: { operation: 'update_status', waitedMs: 100, holderPid: timeoutHolderPid } });
    // In words, with the operation named as the console names it, and the holder as the refusal named it.
    // What it asked for, with its reason: nothing else keeps a change refused for its lock.
    expect(timeout.summary).toBe(`Status change gave up after waiting 100 ms for the lock held by backend ${timeoutHolderPid} (bridge-test:holder, idle in transaction); it asked for FAILED: “give up”`);
    expect(timeout.details).toMatchObject({ holderApplication: 'bridge-test:holder', holderState: 'idle in transaction' });
    expect(wait.summary).toMatch(/^Status change waited \d+ ms for the row lock$/);
    const unblock = items.find((e) => e.kind === 'unblock')!;
    expect(unblock.details).toMatchObject({ action: 'backend_terminate', pid: holderPid });
    const change = items.find((e) => e.kind === 'status_change' && d(e).to === 'NORMALIZED')!;
    expect(change).toMatchObject({ actor: 'alice', details: { from: 'RECEIVED', reason: 'checked by hand' } });
  });

  it('shows each event sent out, with its stream sequence once JetStream acknowledged it', () => {
    const out = items.filter((e) => e.kind === 'event_out');
    expect(out.map((e) => d(e).subject)).toEqual(expect.arrayContaining(['evt.intent.created', 'evt.intent.status_changed', 'evt.intent.corrected', 'evt.intent.conflict']));
    if (natsMode) for (const e of out) expect(d(e).streamSeq, String(d(e).subject)).toEqual(expect.any(Number));
  });

  it('pages through the same list with limit and cursor', async () => {
    const paged: TimelineEntry[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await getIntentTimeline(id, { limit: 4, cursor });
      expect(page.items.length).toBeLessThanOrEqual(4);
      paged.push(...page.items);
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor && pages < 100);
    expect(paged.map((e) => `${e.kind}@${e.position}`)).toEqual(items.map((e) => `${e.kind}@${e.position}`));
    expect(paged).toEqual(items);
    expect(pages).toBe(Math.ceil(items.length / 4));
  });
});

describe('GET /api/intents/:id/timeline', () => {
  const call = (path: string, token?: string) => getTimeline(apiRequest(path, { token }), { params: Promise.resolve({ id: path.split('/')[3] }) });

  it('answers a viewer with the timeline', async () => {
    const viewer = await userWithToken(['viewer']);
    const res = await call(`/api/intents/${id}/timeline`, viewer.token);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { items: TimelineEntry[]; nextCursor: string | null };
    expect(body.items).toEqual(items);
    expect(body.nextCursor).toBeNull();
    // By the short id the console shows, as GET /api/intents/:id takes it.
    const short = await call(`/api/intents/${id.slice(0, 8)}/timeline`, viewer.token);
    expect(short.status).toBe(200);
    expect(((await short.json()) as { items: TimelineEntry[] }).items).toEqual(items);
  });

  it('401 without credentials, 404 for an unknown intent, 400 for a bad id, limit or cursor', async () => {
    const viewer = await userWithToken(['viewer']);
    expect((await call(`/api/intents/${id}/timeline`)).status).toBe(401);
    const unknown = await call('/api/intents/00000000-0000-4000-8000-000000000000/timeline', viewer.token);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'not_found' } });
    const badId = await call('/api/intents/not-an-id/timeline', viewer.token);
    expect(badId.status).toBe(400);
    expect(await badId.json()).toMatchObject({ error: { code: 'invalid_request', details: { fields: [{ field: 'id' }] } } });
    const badLimit = await call(`/api/intents/${id}/timeline?limit=0`, viewer.token);
    expect(await badLimit.json()).toMatchObject({ error: { details: { fields: [{ field: 'limit' }] } } });
    const forged = [
      'bm90LWEtY3Vyc29y',
      Buffer.from(JSON.stringify({ audit: 'abc' })).toString('base64url'),
      Buffer.from(JSON.stringify({ audit: '99999999999999999999:1' })).toString('base64url'),
      Buffer.from(JSON.stringify({ audit: '9999999999999999999:1' })).toString('base64url'),
    ];
    for (const cursor of forged) {
      const res = await call(`/api/intents/${id}/timeline?cursor=${cursor}`, viewer.token);
      expect(res.status, cursor).toBe(400);
      expect(await res.json()).toMatchObject({ error: { details: { fields: [{ field: 'cursor' }] } } });
    }
  });
});

describe('a change refused without waiting', () => {
  it('says why it did not wait: not a NOWAIT nobody asked for, and the holder in plain words', async () => {
    const intent = await createIntent({ payload: { order: 'held-twice' }, source: 'test' }, { name: 'svc' });
    const holder = await holdRowLocks([intent.id], 'bridge-test:holder');
    // One change waits for the row; a second from this process is refused at once, since one already waits.
    const first = updateIntentStatus({ id: intent.id, status: 'FAILED', reason: 'first' }, { name: 'carol' }).catch((e: unknown) => e);
    await waitForWaiters(1);
    const second = await updateIntentStatus({ id: intent.id, status: 'FAILED', reason: 'second' }, { name: 'dave' }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(LockTimeoutError);
    expect((second as LockTimeoutError).details).toMatchObject({ nowait: false, refusedWithoutWaiting: true });
    await holder.release();
    await first;
    await engineEventsWritten();
    const { items } = await getIntentTimeline(intent.id, { limit: 500 });
    const refused = items.find((e) => e.kind === 'lock_timeout' && e.actor === 'dave')!;
    expect(refused.details).toMatchObject({ outcome: 'refused', refusedWithoutWaiting: true });
    expect(refused.details).not.toHaveProperty('nowait');
    expect(refused.summary).toMatch(
      /^Status change refused without waiting: the row was held by backend \d+ \(bridge-test:holder, idle in transaction\), and as many commands as may wait for it already did; it asked for FAILED: “second”$/,
    );
  });
});
