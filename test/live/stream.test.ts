import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { createIntent, updateIntentStatus } from '@/lib/intents/commands';
import { CHANGES_CHANNEL } from '@/lib/live/announce';
import { stopLiveHub } from '@/lib/live/hub';
import { liveEventStream, parseResumePosition } from '@/lib/live/stream';
import { rawClient, resetDatabase, tester } from '../helpers';
import { eventually } from '../wait';

/**
 * The live feed end to end, without a browser: commits through the engine → the engine's NOTIFY after the commit →
 * the process's one LISTEN connection → a round that reads the table → every open server-sent event stream. Positions
 * let a stream that was away resume without missing anything, even what a slow transaction commits late.
 */
type Message = { id?: string; event: string; data: string };

/** Reads a text/event-stream response in the background; `next` waits for a message matching a predicate. */
class SseClient {
  readonly messages: Message[] = [];
  private readonly controller = new AbortController();
  private waiters: (() => void)[] = [];
  private cursor = 0;
  lastEventId: string | undefined;

  static async open(resume: { lastEventId?: string; since?: string } = {}): Promise<SseClient> {
    const client = new SseClient();
    const response = await liveEventStream(parseResumePosition(resume.lastEventId ?? null, resume.since ?? null), client.controller.signal);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('cache-control')).toContain('no-transform');
    void client.pump(response);
    return client;
  }

  private async pump(response: Response) {
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const message: Message = { event: 'message', data: '' };
          let hasData = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue; // heartbeat comment
            const colon = line.indexOf(':');
            const field = line.slice(0, colon);
            const value = line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') message.id = value;
            if (field === 'event') message.event = value;
            if (field === 'data') {
              message.data += value;
              hasData = true;
            }
          }
          if (!hasData) continue;
          // As EventSource does: the last id seen is what a reconnect sends as Last-Event-ID.
          if (message.id !== undefined) this.lastEventId = message.id;
          this.messages.push(message);
          for (const wake of this.waiters.splice(0)) wake();
        }
      }
    } catch {
      // aborted
    }
  }

  /**
   * The next message (after those already taken) for which `match` holds; fails after `timeoutMs`, which only keeps
   * a broken stream from hanging the run: generous, so a busy machine does not fail a working one.
   */
  async next(match: (m: Message) => boolean, timeoutMs = 30_000): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.cursor < this.messages.length) {
        const m = this.messages[this.cursor++];
        if (match(m)) return m;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching event within ${timeoutMs} ms; got ${JSON.stringify(this.messages.map((m) => m.event))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close() {
    this.controller.abort();
  }
}

const changesFor = (intentId: string) => (m: Message) =>
  m.event === 'changes' && (JSON.parse(m.data) as { events: { intentId: string }[] }).events.some((e) => e.intentId === intentId);

const clients: SseClient[] = [];
async function open(resume?: { lastEventId?: string; since?: string }) {
  const c = await SseClient.open(resume);
  clients.push(c);
  await c.next((m) => m.event === 'ready');
  return c;
}

beforeAll(async () => {
  await resetDatabase();
});

afterAll(async () => {
  clients.forEach((c) => c.close());
  await stopLiveHub();
});

describe('the live event stream', () => {
  // How fast a change reaches the screen is measured in the browser suite's live test and the soak, not here: these
  // tests say what arrives and in which order, and wait as long as a busy machine needs.
  it('delivers a change committed through the engine to every open stream, with a position', async () => {
    const a = await open();
    const b = await open();
    const intent = await createIntent({ payload: { live: 'one' }, source: 'live-test' }, tester);
    const [fromA, fromB] = await Promise.all([a.next(changesFor(intent.id)), b.next(changesFor(intent.id))]);
    expect(fromA.id).toMatch(/^\d+\.\d+$/);
    expect(JSON.parse(fromB.data).events).toContainEqual(expect.objectContaining({ intentId: intent.id, action: 'created', toStatus: 'RECEIVED' }));
  });

  it('is woken by a notification the engine sends after its commit, not from inside the writing transaction', async () => {
    const listener = await rawClient('bridge-test:listener');
    try {
      const received: number[] = [];
      listener.on('notification', (n) => {
        if (n.channel === CHANGES_CHANNEL) received.push(Date.now());
      });
      await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
      // Nothing in the database notifies on a write (that took a database-wide lock at every commit): a raw audit
      // row committed outside the engine wakes no one…
      await listener.query(`INSERT INTO audit_events (action, actor) VALUES ('raw_note', 'live-test')`);
      // (The outbox's trigger writes a row in the same transaction; it notifies no one either.)
      const triggers = await listener.query(
        `SELECT t.tgname, p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = 'audit_events'::regclass AND NOT t.tgisinternal ORDER BY t.tgname`,
      );
      expect(triggers.rows.map((r) => r.tgname)).toEqual(['audit_events_no_update', 'audit_events_outbox']);
      expect(triggers.rows.filter((r) => /notify/i.test(r.prosrc)).map((r) => r.tgname)).toEqual([]);
      // …while the engine announces each commit it makes.
      await createIntent({ payload: { live: 'announced' }, source: 'live-test' }, tester);
      await eventually('the commit to be announced', () => received.length > 0);
    } finally {
      await listener.end();
    }
  });

  it('shows a change committed without a notification (a psql session, say): the hub’s safety round finds it', async () => {
    const a = await open();
    const [intent] = await db().$queryRaw<{ id: string }[]>`SELECT id::text FROM intents LIMIT 1`;
    const writer = await rawClient('bridge-test:psql');
    await writer.query(`INSERT INTO audit_events (intent_id, action, actor) VALUES ($1, 'manual_note', 'psql')`, [intent.id]);
    await writer.end();
    await a.next((m) => m.event === 'changes' && JSON.parse(m.data).events.some((e: { action: string }) => e.action === 'manual_note'));
  });

  it('resumes from Last-Event-ID after a disconnect, missing nothing — not even a lower id that commits late', async () => {
    const a = await open();
    const intent = await createIntent({ payload: { live: 'resume' }, source: 'live-test' }, tester);
    await a.next(changesFor(intent.id));

    // A slow writer takes its audit id now and commits only after the page has gone away.
    const slow: pg.Client = await rawClient('bridge-test:slow-writer');
    await slow.query('BEGIN');
    await slow.query(`INSERT INTO audit_events (intent_id, action, actor) VALUES ($1, 'slow_note', 'live-test')`, [intent.id]);
    const other = await createIntent({ payload: { live: 'seen before the disconnect' }, source: 'live-test' }, tester);
    await a.next(changesFor(other.id));
    const position = a.lastEventId!;
    a.close();

    await slow.query('COMMIT');
    await slow.end();
    const moved = await updateIntentStatus({ id: intent.id, status: 'NORMALIZED' }, tester);

    const resumed = await open({ lastEventId: position });
    const caughtUp = await resumed.next((m) => m.event === 'changes' && JSON.parse(m.data).events.some((e: { action: string }) => e.action === 'slow_note'));
    const events = JSON.parse(caughtUp.data).events as { intentId: string; action: string; toStatus: string | null }[];
    expect(events).toContainEqual(expect.objectContaining({ intentId: intent.id, action: 'status_change', toStatus: moved.intent.status }));
  });

  it('takes a position from ?since= when the page hands one over, ignores a malformed header and refuses a malformed since', async () => {
    expect(parseResumePosition('not-a-position', null)).toBeNull();
    expect(() => parseResumePosition(null, 'false')).toThrow(expect.objectContaining({ httpStatus: 400, issues: [expect.objectContaining({ field: 'since' })] }));
    expect(() => parseResumePosition('7.8', '')).toThrow(expect.objectContaining({ httpStatus: 400 }));
    expect(parseResumePosition(null, '12.345')).toEqual({ maxId: '12', xmin: '345' });
    // Last-Event-ID (the browser's own reconnect) wins over the page's ?since=.
    expect(parseResumePosition('7.8', '12.345')).toEqual({ maxId: '7', xmin: '8' });
  });

  it('keeps delivering after its listening connection is killed: it reconnects and reads what committed meanwhile', async () => {
    const a = await open();
    const terminated = await db().$queryRaw<{ ok: boolean }[]>`
      SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'bridge:live' AND query ILIKE 'LISTEN%'`;
    expect(terminated.length).toBeGreaterThan(0);
    await a.next((m) => m.event === 'status' && JSON.parse(m.data).listening === false);
    const intent = await createIntent({ payload: { live: 'while the listener was down' }, source: 'live-test' }, tester);
    // The stream promises both — the listener back, and the change that committed meanwhile — but not their order
    // (a round started by the reconnect can beat the status message): wait for both, in either order.
    let listening = false;
    let delivered = false;
    await a.next((m) => {
      if (m.event === 'status' && JSON.parse(m.data).listening === true) listening = true;
      if (changesFor(intent.id)(m)) delivered = true;
      return listening && delivered;
    }, 15_000);
  });
});
