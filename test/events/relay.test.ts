import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { migrate } from '@/lib/db/migrate';
import { EVENT_SCHEMAS } from '@/lib/events/payloads';
import { OutboxRelay } from '@/lib/events/relay';
import { outboxStatus } from '@/lib/events/status';
import { EVENT_STREAM, type Subject } from '@/lib/events/subjects';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { makeIntent, resetDatabase, tester } from '../helpers';
import { natsMode, startTestNats, type TestNats } from '../nats';
import { eventually } from '../wait';

/**
 * The relay against a real NATS JetStream: every committed change reaches its subject exactly once after
 * deduplication, in version order per intent, with several relays at once; a relay killed between the publish and
 * the mark loses nothing and its republish is deduplicated; NATS down → the backlog grows, then drains. Two
 * databases on one NATS (a reset, a restored backup, a second environment) lose none of each other's events.
 */
let nats: TestNats;
let relays: OutboxRelay[] = [];

function relay(extra: Partial<ConstructorParameters<typeof OutboxRelay>[0]> = {}): OutboxRelay {
  const r = new OutboxRelay({ databaseUrl: process.env.DATABASE_URL!, natsUrl: nats.url, pollMs: 100, publishTimeoutMs: 1_000, maxBackoffMs: 300, log: () => undefined, ...extra });
  relays.push(r);
  return r.start();
}

async function backlog(other?: pg.Client): Promise<number> {
  if (other) return Number((await other.query<{ n: string }>('SELECT count(*) AS n FROM outbox_events WHERE published_at IS NULL')).rows[0].n);
  const [row] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox_events WHERE published_at IS NULL`;
  return Number(row.n);
}


type Message = { seq: number; subject: string; msgId: string | undefined; body: Record<string, unknown> & { intentId: string; version: number; id: string } };

/** Everything in the stream, in stream order. */
async function streamMessages(stream = EVENT_STREAM): Promise<Message[]> {
  const nc = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream);
    const out: Message[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      if (m) out.push({ seq: m.seq, subject: m.subject, msgId: m.header?.get('Nats-Msg-Id'), body: m.json() });
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** The outbox's event ids (what the stream's messages carry), of this test's database or of `other`. */
async function outboxIds(other?: pg.Client): Promise<string[]> {
  if (other) return (await other.query<{ id: string }>('SELECT event_id::text AS id FROM outbox_events ORDER BY outbox_events.id')).rows.map((r) => r.id);
  const rows = await db().$queryRaw<{ id: string }[]>`SELECT event_id::text AS id FROM outbox_events ORDER BY outbox_events.id`;
  return rows.map((r) => r.id);
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
    await eventually('the backlog to drain', async () => (await backlog()) === 0);
    const ids = await outboxIds();
    expect(ids.length).toBeGreaterThanOrEqual(20 * 5);
    expectExactlyOnceInOrder(await streamMessages(), ids);
    // The partitions were shared out: every relay held some, none twice.
    await eventually('the partitions to be shared', () => three.every((r) => r.stats.partitions.length > 0));
    const all = three.flatMap((r) => r.stats.partitions);
    expect(new Set(all).size).toBe(all.length);
    // What the console's Events page shows.
    const status = await outboxStatus();
    expect(status).toMatchObject({ backlog: 0, lagMs: 0, stream: { name: 'BRIDGE_EVENTS', subjects: ['evt.intent.>', 'evt.lock.>'] } });
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
    await eventually('the backlog to drain', async () => (await backlog()) === 0);
    expect(second.stats.duplicates).toBe(publishedByFirst.length);
    expectExactlyOnceInOrder(await streamMessages(), await outboxIds());
  });

  it.skipIf(natsMode !== 'binary')('keeps the backlog while NATS is down and drains it when NATS is back, losing nothing; its log says both', async () => {
    const logged: string[] = [];
    const r = relay({ log: (line: string) => logged.push(line) });
    await churn(2);
    await eventually('the first changes to be published', async () => (await backlog()) === 0);

    await nats.stop();
    await churn(5);
    const waiting = await backlog();
    expect(waiting).toBeGreaterThanOrEqual(5 * 5);
    await eventually('the relay to notice', () => r.stats.failures > 0 || !r.stats.natsConnected);
    expect(await backlog()).toBe(waiting);
    const during = await outboxStatus();
    expect(during.backlog).toBe(waiting);
    expect(during.oldestUnpublishedAt).not.toBeNull();

    await nats.start();
    await eventually('the backlog to drain', async () => (await backlog()) === 0);
    expectExactlyOnceInOrder(await streamMessages(), await outboxIds());
    // A log read later shows the pause and then the recovery, not a pause as its last word.
    const paused = logged.findIndex((l) => l.startsWith('publishing paused'));
    const resumed = logged.findIndex((l) => l.startsWith('publishing resumed after'));
    expect(paused).toBeGreaterThanOrEqual(0);
    expect(resumed).toBeGreaterThan(paused);
  });
});

/**
 * A second database on the same Postgres server, migrated like the first: its outbox ids start at 1 as well, as a
 * fresh install's, a reset staging database's or a restored backup's do.
 */
async function secondDatabase(): Promise<{ url: string; client: pg.Client; drop: () => Promise<void> }> {
  const name = `bridge_events_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const url = new URL(process.env.DATABASE_URL!);
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  const client = new pg.Client({ connectionString: url.toString(), application_name: 'bridge-test:second-db' });
  await client.connect();
  return {
    url: url.toString(),
    client,
    drop: async () => {
      await client.end().catch(() => undefined);
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/** Intents created in the other database the way the engine writes them (intent and audit row; the trigger writes the outbox). */
async function createIntentsIn(client: pg.Client, count: number): Promise<void> {
  await client.query(
    `WITH created AS (
       INSERT INTO intents (id, status, payload, source)
       SELECT gen_random_uuid(), 'RECEIVED', jsonb_build_object('n', g), 'second-db' FROM generate_series(1, $1::int) g
       RETURNING *)
     INSERT INTO audit_events (intent_id, action, actor, to_status, version_after, details)
     SELECT id, 'created', 'second-db', status, version, jsonb_build_object('source', source) FROM created`,
    [count],
  );
}

describe.skipIf(!natsMode)('two databases publishing to one NATS', () => {
  let other: Awaited<ReturnType<typeof secondDatabase>>;

  beforeEach(async () => {
    await resetDatabase();
    nats = await startTestNats();
    other = await secondDatabase();
  });

  afterEach(async () => {
    await Promise.all(relays.map((r) => r.stop().catch(() => undefined)));
    relays = [];
    await other.drop();
    await nats.dispose();
  });

  it('one stream (a reset or a restored backup publishing where the first database did): none of the second one’s events is taken for a duplicate', async () => {
    const first = relay({ name: 'first-db' });
    await churn(5);
    await eventually('the first database to drain', async () => (await backlog()) === 0);
    const firstIds = await outboxIds();

    await createIntentsIn(other.client, 30);
    const second = relay({ name: 'second-db', databaseUrl: other.url });
    await eventually('the second database to drain', async () => (await backlog(other.client)) === 0);
    const secondIds = await outboxIds(other.client);

    // Both outboxes counted from 1: with the row number as message id most of the second database's events were
    // acknowledged as duplicates of the first one's and dropped.
    const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox_events WHERE id BETWEEN 1 AND 30`;
    expect(Number(n)).toBeGreaterThanOrEqual(20);
    expect((await other.client.query<{ ids: string }>(`SELECT string_agg(id::text, ',' ORDER BY id) AS ids FROM outbox_events`)).rows[0].ids).toBe(
      Array.from({ length: 30 }, (_, i) => i + 1).join(','),
    );

    expect(second.stats.duplicates).toBe(0);
    expect(first.stats.duplicates).toBe(0);
    const messages = await streamMessages();
    expect(messages).toHaveLength(firstIds.length + secondIds.length);
    expectExactlyOnceInOrder(messages, [...firstIds, ...secondIds]);
    // Each database marked its rows with the sequence its own message got.
    const { rows } = await other.client.query<{ seq: string }>('SELECT stream_seq AS seq FROM outbox_events ORDER BY id');
    expect(new Set(rows.map((r) => r.seq)).size).toBe(30);
    expect(rows.every((r) => Number(r.seq) > firstIds.length)).toBe(true);
  });

  it('one stream, both databases publishing at once: every event of each is in the stream once', async () => {
    relay({ name: 'first-db' });
    relay({ name: 'second-db', databaseUrl: other.url });
    await Promise.all([churn(5), createIntentsIn(other.client, 40)]);
    await eventually('both databases to drain', async () => (await backlog()) === 0 && (await backlog(other.client)) === 0);
    expectExactlyOnceInOrder(await streamMessages(), [...(await outboxIds()), ...(await outboxIds(other.client))]);
  });

  it('two environments, each with its own stream and subject prefix: each stream holds exactly its own events', async () => {
    const staging = { name: 'BRIDGE_EVENTS_STAGING', subjectPrefix: 'staging' };
    relay({ name: 'production' });
    relay({ name: 'staging', databaseUrl: other.url, stream: staging });
    await Promise.all([churn(3), createIntentsIn(other.client, 10)]);
    await eventually('both databases to drain', async () => (await backlog()) === 0 && (await backlog(other.client)) === 0);

    const production = await streamMessages();
    expect(production.map((m) => m.msgId).sort()).toEqual((await outboxIds()).sort());
    const stagingMessages = await streamMessages(staging.name);
    expect(stagingMessages.map((m) => m.msgId).sort()).toEqual((await outboxIds(other.client)).sort());
    for (const m of stagingMessages) {
      expect(m.subject).toBe(`staging.${m.body.type}`);
      expect(m.body.type).toBe('evt.intent.created');
      expect(EVENT_SCHEMAS['evt.intent.created'].safeParse(m.body).success).toBe(true);
    }
    expect(production.every((m) => m.subject === m.body.type)).toBe(true);
  });

  it('a second stream configured over the first one’s subjects publishes nothing and says what to set', async () => {
    relay({ name: 'production' });
    await churn(1);
    await eventually('the first database to drain', async () => (await backlog()) === 0);
    await createIntentsIn(other.client, 5);
    const misconfigured = relay({ name: 'staging', databaseUrl: other.url, stream: { name: 'BRIDGE_EVENTS_STAGING', subjectPrefix: '' } });
    await eventually('the relay to give its reason', () => misconfigured.stats.lastError !== null);
    expect(misconfigured.stats.lastError).toMatch(/EVENTS_STREAM and EVENTS_SUBJECT_PREFIX/);
    expect(misconfigured.stats.published).toBe(0);
    expect(await backlog(other.client)).toBe(5);
    expect((await streamMessages()).length).toBe((await outboxIds()).length);
  });
});
