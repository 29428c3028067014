import { jetstreamManager } from '@nats-io/jetstream';
import { connect, headers } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { OutboxRelay } from '@/lib/events/relay';
import { EVENT_STREAM } from '@/lib/events/subjects';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { outboxPublishedOnce } from '@/lib/invariants/outbox';
import { checkInvariants } from '@/lib/invariants/run';
import { makeIntent, resetDatabase, tester } from '../helpers';
import { natsMode, startTestNats, type TestNats } from '../nats';
import { eventually } from '../wait';

/**
 * The outbox held to the stream itself: after a real relay published everything, each event is in the stream once;
 * then the stream is broken on purpose — a message lost, a copy that slipped past deduplication — and so is the
 * outbox (a row marked published that never was), and the check must say so each time.
 */
let nats: TestNats;

async function publishEverything() {
  const relay = new OutboxRelay({ databaseUrl: process.env.DATABASE_URL!, natsUrl: nats.url, pollMs: 50, publishTimeoutMs: 2_000, maxBackoffMs: 200, log: () => undefined }).start();
  try {
    await eventually('every event to be published', async () => {
      const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox_events WHERE published_at IS NULL`;
      return Number(n) === 0;
    });
  } finally {
    await relay.stop();
  }
}

async function streamCheck(drained = true) {
  const report = await checkInvariants(db(), { checks: [outboxPublishedOnce(nats.url, { drained })] });
  const [check] = report.checks;
  if (!('checked' in check)) throw new Error(check.skipped);
  return check;
}

async function withStream<T>(work: (jsm: Awaited<ReturnType<typeof jetstreamManager>>, nc: Awaited<ReturnType<typeof connect>>) => Promise<T>): Promise<T> {
  const nc = await connect({ servers: nats.url });
  try {
    return await work(await jetstreamManager(nc), nc);
  } finally {
    await nc.close();
  }
}

describe.skipIf(!natsMode)('the outbox against the event stream', () => {
  beforeAll(async () => {
    nats = await startTestNats();
  });
  afterAll(async () => {
    await nats?.dispose();
  });
  beforeEach(async () => {
    await flushOutcomes();
    await resetDatabase();
    // Each test starts from an empty stream, so earlier tests' messages cannot stand in for this one's.
    await withStream(async (jsm) => {
      await jsm.streams.delete(EVENT_STREAM).catch(() => undefined);
    });
  });
  afterEach(async () => {
    await db().$executeRaw`TRUNCATE outbox_events`;
  });

  async function someChanges() {
    const a = await makeIntent('PROCESSED');
    await reevaluateIntent({ id: a.id, diff: { amount: 3 }, source: 'test', reason: 'stream check' }, tester);
    await updateIntentStatus({ id: a.id, status: 'COMPLETED' }, tester);
    await publishEverything();
    const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox_events`;
    return Number(n);
  }

  it('finds each published event in the stream once', async () => {
    const events = await someChanges();
    const check = await streamCheck();
    expect(check.violationCount).toBe(0);
    expect(check.checked).toBe(events);
    expect(check.note).toBe(`${events} messages in the stream`);
  });

  it('catches an event the stream lost', async () => {
    await someChanges();
    const [{ seq }] = await db().$queryRaw<{ seq: bigint }[]>`SELECT stream_seq AS seq FROM outbox_events ORDER BY id DESC LIMIT 1`;
    await withStream((jsm) => jsm.streams.deleteMessage(EVENT_STREAM, Number(seq)));
    const check = await streamCheck();
    expect(check.violationCount).toBe(1);
    expect(check.violations[0].detail).toBe(`marked published at stream sequence ${seq}, but the stream does not have it`);
  });

  it('catches a second copy that deduplication did not drop', async () => {
    await someChanges();
    const [row] = await db().$queryRaw<{ id: string; subject: string; body: string }[]>`
      SELECT event_id::text AS id, subject, (payload || jsonb_build_object('id', event_id::text))::text AS body FROM outbox_events ORDER BY outbox_events.id LIMIT 1`;
    // The same event under another message id: JetStream cannot know it is a repeat.
    await withStream(async (jsm) => {
      const h = headers();
      h.set('Nats-Msg-Id', `not-${row.id}`);
      await jsm.jetstream().publish(row.subject, row.body, { headers: h });
    });
    const check = await streamCheck();
    expect(check.violationCount).toBe(1);
    expect(check.violations[0]).toMatchObject({ subject: row.id, detail: expect.stringMatching(/^in the stream 2 times/) });
  });

  it('catches an event marked published that never reached the stream, and one never published at all', async () => {
    await someChanges();
    const intent = await makeIntent('RECEIVED');
    // No relay runs now: one of the new events is marked published by hand, the other stays behind.
    await db().$executeRaw`
      UPDATE outbox_events SET published_at = now(), stream_seq = 999999
      WHERE id = (SELECT min(id) FROM outbox_events WHERE published_at IS NULL)`;
    await updateIntentStatus({ id: intent.id, status: 'FAILED' }, tester);
    const live = await streamCheck(false);
    expect(live.violationCount).toBe(1);
    expect(live.note).toMatch(/1 event\(s\) not published yet \(the backlog\)$/);
    const drained = await streamCheck(true);
    expect(drained.violationCount).toBe(2);
    expect(drained.violations.map((v) => v.detail).sort()).toEqual([
      'marked published at stream sequence 999999, but the stream does not have it',
      'never published: not marked, not in the stream',
    ]);
  });
});
