import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { EVENT_SCHEMAS } from '@/lib/events/payloads';
import { OutboxRelay } from '@/lib/events/relay';
import { outboxStatus } from '@/lib/events/status';
import { EVENT_STREAM, type Subject } from '@/lib/events/subjects';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { makeIntent, resetDatabase, tester } from '../helpers';
import { natsMode, startTestNats, type TestNats } from '../nats';

/**
 * The relay against a real NATS JetStream: every committed change reaches its subject exactly once after
 * deduplication, in version order per intent, with several relays at once; a relay killed between the publish and
 * the mark loses nothing and its republish is deduplicated; NATS down → the backlog grows, then drains.
 */
let nats: TestNats;
let relays: OutboxRelay[] = [];

function relay(extra: Partial<ConstructorParameters<typeof OutboxRelay>[0]> = {}): OutboxRelay {
  const r = new OutboxRelay({ databaseUrl: process.env.DATABASE_URL!, natsUrl: nats.url, pollMs: 100, publishTimeoutMs: 1_000, maxBackoffMs: 300, log: () => undefined, ...extra });
  relays.push(r);
  return r.start();
}

async function backlog(): Promise<number> {
  const [row] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox_events WHERE published_at IS NULL`;
  return Number(row.n);
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

type Message = { seq: number; subject: string; msgId: string | undefined; body: Record<string, unknown> & { intentId: string; version: number; id: string } };

/** Everything in the stream, in stream order. */
async function streamMessages(): Promise<Message[]> {
  const nc = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(EVENT_STREAM);
    const out: Message[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage(EVENT_STREAM, { seq });
      if (m) out.push({ seq: m.seq, subject: m.subject, msgId: m.header?.get('Nats-Msg-Id'), body: m.json() });
    }
    return out;
  } finally {
    await nc.close();
  }
}

async function outboxIds(): Promise<string[]> {
  const rows = await db().$queryRaw<{ id: bigint }[]>`SELECT id FROM outbox_events ORDER BY id`;
  return rows.map((r) => String(r.id));
}

function expectExactlyOnceInOrder(messages: Message[], ids: string[]) {
  expect(messages.map((m) => m.msgId).sort()).toEqual([...ids].sort());
  for (const m of messages) {
    expect(m.msgId).toBe(m.body.id);
    const parsed = EVENT_SCHEMAS[m.subject as Subject].safeParse(m.body);
    expect(parsed.success, `${m.subject}: ${parsed.error?.message}`).toBe(true);
  }
  // Per intent, the changes (not the conflicts, which repeat the version they found) arrive in version order.
  const last = new Map<string, number>();
  for (const m of messages.filter((x) => x.subject !== 'evt.intent.conflict')) {
    const before = last.get(m.body.intentId) ?? -1;
    expect(m.body.version, `intent ${m.body.intentId}: version ${m.body.version} after ${before}`).toBeGreaterThan(before);
    last.set(m.body.intentId, m.body.version);
  }
}

/** Several concurrent changes on each of `count` intents: transitions, identical racers, corrections, stale writers. */
async function churn(count: number) {
  const intents = await Promise.all(Array.from({ length: count }, () => makeIntent('RECEIVED')));
  await Promise.all(
    intents.map(async (intent) => {
      await Promise.all([updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester), updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester)]);
      await updateIntentStatus({ id: intent.id, status: 'PROCESSED' }, tester);
      await Promise.allSettled([
        reevaluateIntent({ id: intent.id, diff: { step: 1 }, source: 'relay-test', reason: 'one' }, tester),
        reevaluateIntent({ id: intent.id, diff: { step: 2 }, source: 'relay-test', reason: 'two' }, tester),
        updateIntentStatus({ id: intent.id, status: 'FAILED', expectedVersion: 0 }, tester),
      ]);
    }),
  );
}

describe.skipIf(!natsMode)('the outbox relay and NATS JetStream', () => {
  beforeEach(async () => {
    await resetDatabase();
    nats = await startTestNats();
  });

  afterEach(async () => {
    await Promise.all(relays.map((r) => r.stop().catch(() => undefined)));
    relays = [];
    await nats.dispose();
  });

  it('publishes every change of concurrent writers exactly once, in version order per intent, with three relays', async () => {
    const three = [relay({ name: 'r1' }), relay({ name: 'r2' }), relay({ name: 'r3' })];
    await churn(20);
    await until('the backlog to drain', async () => (await backlog()) === 0);
    const ids = await outboxIds();
    expect(ids.length).toBeGreaterThanOrEqual(20 * 5);
    expectExactlyOnceInOrder(await streamMessages(), ids);
    // The partitions were shared out: every relay held some, none twice.
    await until('the partitions to be shared', () => three.every((r) => r.stats.partitions.length > 0));
    const all = three.flatMap((r) => r.stats.partitions);
    expect(new Set(all).size).toBe(all.length);
    // What the console's Events page shows.
    const status = await outboxStatus();
    expect(status).toMatchObject({ backlog: 0, lagMs: 0 });
    expect(status.relays).toHaveLength(3);
    expect(status.relays.flatMap((r) => r.partitions).sort()).toEqual([...all].sort());
  });

  it('republishes what a relay published but did not mark before it died, and JetStream drops the copies', async () => {
    let publishedByFirst: string[] = [];
    let died!: () => void;
    const dead = new Promise<void>((resolve) => (died = resolve));
    const first = relay({
      name: 'doomed',
      afterPublish: async (ids) => {
        publishedByFirst = ids;
        await first.crash();
        died();
      },
    });
    await churn(5);
    await dead;
    expect(publishedByFirst.length).toBeGreaterThan(0);
    const [marked] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox_events WHERE published_at IS NOT NULL`;
    expect(Number(marked.n)).toBe(0);
    expect((await streamMessages()).length).toBe(publishedByFirst.length);

    const second = relay({ name: 'survivor' });
    await until('the backlog to drain', async () => (await backlog()) === 0);
    expect(second.stats.duplicates).toBe(publishedByFirst.length);
    expectExactlyOnceInOrder(await streamMessages(), await outboxIds());
  });

  it.skipIf(natsMode !== 'binary')('keeps the backlog while NATS is down and drains it when NATS is back, losing nothing', async () => {
    const r = relay();
    await churn(2);
    await until('the first changes to be published', async () => (await backlog()) === 0);

    await nats.stop();
    await churn(5);
    const waiting = await backlog();
    expect(waiting).toBeGreaterThanOrEqual(5 * 5);
    await until('the relay to notice', () => r.stats.failures > 0 || !r.stats.natsConnected);
    expect(await backlog()).toBe(waiting);
    const during = await outboxStatus();
    expect(during.backlog).toBe(waiting);
    expect(during.oldestUnpublishedAt).not.toBeNull();

    await nats.start();
    await until('the backlog to drain', async () => (await backlog()) === 0);
    expectExactlyOnceInOrder(await streamMessages(), await outboxIds());
  });
});
