import { jetstream, jetstreamManager, JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { CHANGES_CHANNEL } from '@/lib/live/announce';
import { ALL_SUBJECTS, DEFAULT_EVENT_STREAM, natsSubject, OUTBOX_CHANNEL, streamSubjects, type EventStream } from './subjects';

/**
 * The outbox relay: publishes committed outbox rows to NATS JetStream and marks each published only after JetStream
 * acknowledged it. At least once: a relay that dies between the acknowledgement and the mark leaves the row for the
 * next one, which publishes it again under the same message id (the row's event id, a UUID drawn when the row was
 * written), and JetStream's duplicate window drops the second copy. The id is random rather than the row's sequence
 * number so that another database publishing to the same stream (a reset, a restored backup, a second environment)
 * never sends an id of this one's: its events would be acknowledged as duplicates and dropped.
 *
 * Any number of relays (in `npm start`, `npm run relay`, workers) share the work through Postgres alone. The outbox
 * is cut into PARTITIONS by ordering key (an intent, a lock's resource); a relay owns a partition while it holds a
 * session advisory lock on it, on its own connection (application_name `bridge:relay`), and takes about its share:
 * partitions ÷ relays connected. A partition's rows are published in id order, and each key's next event only after
 * the previous one was acknowledged, so one intent's events reach the stream in version order even when relays hand
 * partitions over: a relay that lost its partition mid-publish repeats only messages already in the stream or sent
 * after their predecessors, and the first copy of each is the one kept.
 *
 * It wakes on NOTIFY (the engine's `bridge_changes` after its commits, `bridge_outbox` from other writers), polls as
 * a fallback, backs off while NATS or Postgres is unreachable and catches up when they return. Everything it does in
 * Postgres goes through its own connection to `databaseUrl`, so a relay serves exactly the database it was given.
 */
export const PARTITIONS = 16;
/** First key of the relays' two-key advisory locks ("outb"); the second is the partition. */
export const RELAY_LOCK_CLASS = 0x6f757462;
export const RELAY_APPLICATION_NAME = 'bridge:relay';

export type RelayOptions = {
  databaseUrl: string;
  natsUrl: string;
  /** The stream and subject prefix to publish to (configuredEventStream() in a deployment). */
  stream?: EventStream;
  name?: string;
  batchSize?: number;
  pollMs?: number;
  retentionHours?: number;
  publishTimeoutMs?: number;
  maxBackoffMs?: number;
  /** JetStream's duplicate window for a stream this relay creates. */
  duplicateWindowMs?: number;
  /** Tests: runs after a batch was acknowledged and before it is marked (a crash here must lose nothing). */
  afterPublish?: (ids: string[]) => Promise<void> | void;
  log?: (line: string) => void;
};

export type RelayStats = {
  published: number;
  duplicates: number;
  failures: number;
  natsConnected: boolean;
  partitions: number[];
  lastError: string | null;
};

type OutboxRow = { id: string; eventId: string; subject: string; key: string; body: string };

const PURGE_EVERY_MS = 10 * 60_000;
const REBALANCE_EVERY_MS = 1_000;

export class OutboxRelay {
  readonly stats: RelayStats = { published: 0, duplicates: 0, failures: 0, natsConnected: false, partitions: [], lastError: null };
  private readonly opts: Required<Omit<RelayOptions, 'afterPublish' | 'name'>> & Pick<RelayOptions, 'afterPublish' | 'name'>;
  private lockClient: pg.Client | null = null;
  private nc: NatsConnection | null = null;
  private js: JetStreamClient | null = null;
  private readonly held = new Set<number>();
  private stopped = false;
  private crashed = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private woken = false;
  private lastRebalance = 0;
  private lastPurge = 0;

  constructor(options: RelayOptions) {
    this.opts = {
      batchSize: 500,
      pollMs: 1_000,
      retentionHours: 72,
      publishTimeoutMs: 5_000,
      maxBackoffMs: 10_000,
      duplicateWindowMs: 10 * 60_000,
      stream: DEFAULT_EVENT_STREAM,
      log: (line) => console.log(`[relay] ${line}`),
      ...options,
    };
  }

  start(): this {
    this.loop ??= this.run();
    return this;
  }

  /** Stops after the current batch (marked), releasing its partitions. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp();
    await this.loop;
    await this.close();
  }

  /** Tests: dies on the spot, as a killed process would: nothing more is marked, its connections just drop. */
  async crash(): Promise<void> {
    this.crashed = true;
    this.stopped = true;
    this.wakeUp();
    await this.close();
  }

  private async close() {
    const client = this.lockClient;
    this.lockClient = null;
    this.held.clear();
    this.stats.partitions = [];
    await client?.end().catch(() => undefined);
    const nc = this.nc;
    this.nc = null;
    this.js = null;
    this.stats.natsConnected = false;
    await nc?.close().catch(() => undefined);
  }

  private wakeUp() {
    this.woken = true;
    this.wake?.();
  }

  private async sleep(ms: number) {
    if (this.woken || this.stopped) {
      this.woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
    this.wake = null;
    this.woken = false;
  }

  private async run() {
    let failures = 0;
    while (!this.stopped) {
      try {
        await this.ensureLockClient();
        await this.ensureNats();
        await this.rebalance();
        const published = await this.round();
        // Said once, so that a log whose last line is the pause does not read as stuck.
        if (this.stats.lastError !== null) this.opts.log(`publishing resumed after ${failures} failed attempt${failures === 1 ? '' : 's'}`);
        failures = 0;
        this.stats.lastError = null;
        if (published >= this.opts.batchSize) continue;
        await this.purgeIfDue();
        await this.sleep(this.opts.pollMs);
      } catch (err) {
        if (this.crashed) return;
        failures++;
        this.stats.failures++;
        const message = err instanceof Error ? err.message : String(err);
        if (this.stats.lastError !== message) this.opts.log(`publishing paused (${message}); retrying with backoff`);
        this.stats.lastError = message;
        const delay = Math.min(this.opts.maxBackoffMs, 100 * 2 ** Math.min(failures, 10)) * (0.5 + Math.random() / 2);
        await this.sleep(delay);
      }
    }
  }

  private async ensureLockClient() {
    if (this.lockClient) return;
    const client = new pg.Client({ connectionString: this.opts.databaseUrl, application_name: RELAY_APPLICATION_NAME, keepAlive: true });
    const lost = () => {
      if (this.lockClient !== client) return;
      // Its advisory locks went with the connection: another relay may own those partitions now.
      this.lockClient = null;
      this.held.clear();
      this.stats.partitions = [];
      client.end().catch(() => undefined);
      this.wakeUp();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', () => this.wakeUp());
    await client.connect();
    await client.query(`LISTEN ${CHANGES_CHANNEL}; LISTEN ${OUTBOX_CHANNEL}`);
    this.lockClient = client;
    this.lastRebalance = 0;
  }

  private async ensureNats() {
    if (this.nc && !this.nc.isClosed()) return;
    const nc = await connect({
      servers: this.opts.natsUrl,
      name: this.opts.name ?? 'bridge-relay',
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      timeout: 2_000,
    });
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') this.stats.natsConnected = false;
        if (s.type === 'reconnect') {
          this.stats.natsConnected = true;
          this.wakeUp();
        }
      }
    })().catch(() => undefined);
    try {
      await this.ensureStream(nc);
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
    this.nc = nc;
    this.js = jetstream(nc, { timeout: this.opts.publishTimeoutMs });
    this.stats.natsConnected = true;
    this.opts.log(`connected to NATS (${nc.getServer()}); stream ${this.opts.stream.name}, subjects ${streamSubjects(this.opts.stream).join(', ')}`);
  }

  /**
   * Creates the stream when it is missing, then checks that JetStream files every subject this relay publishes in
   * that stream: a stream of another environment over the same subjects would take the events instead (or refuse
   * to let ours be created), and publishing must not start until the configuration says where they go.
   */
  private async ensureStream(nc: NatsConnection) {
    const jsm = await jetstreamManager(nc);
    const { name } = this.opts.stream;
    const subjects = streamSubjects(this.opts.stream);
    if (!(await streamExists(jsm, name))) {
      try {
        await jsm.streams.add({ name, subjects, duplicate_window: nanos(this.opts.duplicateWindowMs) });
      } catch (err) {
        // Another relay may have created it at the same moment; anything else is said below or rethrown.
        if (!(await streamExists(jsm, name))) throw new Error(`could not create the stream ${name} over ${subjects.join(', ')}: ${messageOf(err)}${SHARED_NATS_HINT}`);
      }
    }
    for (const type of ALL_SUBJECTS) {
      const subject = natsSubject(this.opts.stream, type);
      const holder = await jsm.streams.find(subject).catch(() => null);
      if (holder !== name) {
        throw new Error(`${subject} is ${holder ? `stored by the stream ${holder}` : 'in no stream'}, not in ${name}${SHARED_NATS_HINT}`);
      }
    }
  }

  /** Holds about partitions ÷ relays: gives back the extra ones when relays join, takes free ones when they leave. */
  private async rebalance() {
    const client = this.lockClient;
    if (!client || Date.now() - this.lastRebalance < REBALANCE_EVERY_MS) return;
    this.lastRebalance = Date.now();
    const { rows } = await client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [RELAY_APPLICATION_NAME],
    );
    const share = Math.ceil(PARTITIONS / Math.max(1, rows[0].n));
    for (const p of [...this.held].slice(share)) {
      await client.query('SELECT pg_advisory_unlock($1, $2)', [RELAY_LOCK_CLASS, p]);
      this.held.delete(p);
    }
    if (this.held.size < share) {
      const free = shuffle([...Array(PARTITIONS).keys()].filter((p) => !this.held.has(p)));
      // Stops trying once it has its share: the LIMIT ends the scan before more locks are attempted.
      const taken = await client.query<{ p: number }>('SELECT p FROM unnest($2::int[]) AS p WHERE pg_try_advisory_lock($1, p) LIMIT $3', [
        RELAY_LOCK_CLASS,
        free,
        share - this.held.size,
      ]);
      for (const { p } of taken.rows) this.held.add(p);
    }
    this.stats.partitions = [...this.held].sort((a, b) => a - b);
  }

  /** One batch of the owned partitions: publish (each key in order), then mark what was acknowledged. */
  private async round(): Promise<number> {
    const js = this.js;
    const client = this.lockClient;
    if (!js || !client || !this.held.size) return 0;
    const { rows } = await client.query<OutboxRow>(
      `SELECT id::text AS id, event_id::text AS "eventId", subject, ordering_key AS key,
              (payload || jsonb_build_object('id', event_id::text))::text AS body
       FROM outbox_events
       WHERE published_at IS NULL AND partition = ANY($1::smallint[])
       ORDER BY outbox_events.id LIMIT $2`,
      [[...this.held], this.opts.batchSize],
    );
    if (!rows.length) return 0;
    const byKey = new Map<string, OutboxRow[]>();
    for (const row of rows) {
      const queue = byKey.get(row.key);
      if (queue) queue.push(row);
      else byKey.set(row.key, [row]);
    }
    const acked: { id: string; seq: number }[] = [];
    let failure: unknown;
    await Promise.all(
      [...byKey.values()].map(async (queue) => {
        for (const row of queue) {
          if (failure !== undefined || this.crashed) return;
          try {
            const ack = await js.publish(natsSubject(this.opts.stream, row.subject), row.body, { msgID: row.eventId, timeout: this.opts.publishTimeoutMs });
            acked.push({ id: row.id, seq: ack.seq });
            if (ack.duplicate) this.stats.duplicates++;
          } catch (err) {
            // This key's later events wait for the next round: they must not overtake the one that failed.
            failure ??= err;
            return;
          }
        }
      }),
    );
    if (this.opts.afterPublish && acked.length) await this.opts.afterPublish(acked.map((a) => a.id));
    if (this.crashed) return 0;
    if (acked.length) {
      await client.query(
        `UPDATE outbox_events o SET published_at = now(), stream_seq = m.seq
         FROM unnest($1::bigint[], $2::bigint[]) AS m(id, seq)
         WHERE o.id = m.id AND o.published_at IS NULL`,
        [acked.map((a) => a.id), acked.map((a) => a.seq)],
      );
      this.stats.published += acked.length;
    }
    if (failure !== undefined) throw failure;
    return rows.length;
  }

  /** Published rows older than the retention period go, a slice at a time (every relay may do it; it is idempotent). */
  private async purgeIfDue() {
    const client = this.lockClient;
    if (!client || Date.now() - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = Date.now();
    await purgePublishedEvents(client, this.opts.retentionHours);
  }
}

export async function purgePublishedEvents(client: pg.ClientBase | pg.Pool, retentionHours: number): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await client.query(
      `DELETE FROM outbox_events WHERE id IN (
         SELECT id FROM outbox_events
         WHERE published_at IS NOT NULL AND published_at < now() - make_interval(hours => $1::int)
         LIMIT 5000)`,
      [retentionHours],
    );
    const n = rowCount ?? 0;
    total += n;
    if (n < 5000) return total;
  }
}

const SHARED_NATS_HINT =
  '. Environments sharing one NATS server need a stream and subjects of their own: set EVENTS_STREAM and EVENTS_SUBJECT_PREFIX (docs/EVENTS.md)';

async function streamExists(jsm: JetStreamManager, name: string): Promise<boolean> {
  try {
    await jsm.streams.info(name);
    return true;
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return false;
    throw err;
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
