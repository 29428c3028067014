import { EventEmitter } from 'node:events';
import pg from 'pg';
import { exactAnswer, type CountsAnswer } from '@/lib/counts/answer';
import { maintainedStatusCounts } from '@/lib/counts/status-counts';
import { directDatabaseUrl } from '@/lib/db/client';
import { oneLineError } from '@/lib/db/pg-capture';
import { CHANGES_CHANNEL } from './announce';
import { changesSinceSnapshot, currentSnapshot, formatPosition, type LiveEvent, type Snapshot } from './positions';

/**
 * One live hub per server process: a dedicated `pg` connection LISTENs on `bridge_changes` (every instance's engine
 * notifies after its commits, announce.ts), and each notification wakes a "round" that reads what committed since
 * the last round from `audit_events` itself (positions.ts) and fans it out to every open event stream of this process.
 *
 * Notifications are only a wake-up call: the rows are the truth. So a notification lost while the listening
 * connection was down, or never sent (a writer that died after its commit, a person's psql session), costs at most a
 * second — the safety round, or the round after reconnecting, reads it from the table — and rounds are coalesced
 * (at most one every ROUND_MIN_GAP_MS) so a burst of commits becomes one query and one message.
 */
export type LiveBatch =
  /**
   * `counts`: the status counts after these changes (exact, lib/counts), read once per round by the hub for every
   * page of this instance, so no page fetches them itself; null when they could not be read (pages refetch then).
   */
  | { kind: 'changes'; position: string; events: LiveEvent[]; counts?: CountsAnswer | null }
  /**
   * Too much happened at once (or since a resume point): refetch everything rather than receive each event. `lsn`:
   * the WAL position at or past every change it stands for, which the refetch waits for (as each event's `lsn`).
   */
  | { kind: 'reset'; position: string; lsn?: string; counts?: CountsAnswer | null }
  | { kind: 'status'; listening: boolean };

type Subscriber = (batch: LiveBatch) => void;

const ROUND_MIN_GAP_MS = 50;
/**
 * Safety net: a round every second even without notifications (cheap: an index range scan that finds nothing), so
 * a change whose writer sent no notification is still on screen within about a second.
 */
const SAFETY_ROUND_MS = 1_000;
const BACKOFF_BASE_MS = 250;
const BACKOFF_MAX_MS = 10_000;

/** Auth changes (revokes, disabled users, role changes), notified by triggers (prisma/functions/50_auth_changes.sql). */
export const AUTH_CHANNEL = 'bridge_auth';

/**
 * What other modules hear through this hub's connection: 'auth' on every AUTH_CHANNEL notification, and
 * 'listening' (true or false) whenever the connection comes up or is lost — while it is lost, notifications can be
 * missed. lib/auth/token-cache.ts drops its cache on both.
 */
const globalSignals = globalThis as unknown as { bridgeHubSignals?: EventEmitter };
export const hubSignals: EventEmitter = (globalSignals.bridgeHubSignals ??= new EventEmitter().setMaxListeners(50));

export class LiveHub {
  private readonly subscribers = new Set<Subscriber>();
  private client: pg.Client | null = null;
  private snapshot: Snapshot | null = null;
  private listening = false;
  private everListened = false;
  private stopped = false;
  private attempt = 0;
  private roundRunning = false;
  private roundWanted = false;
  private lastRoundAt = 0;
  private failedRounds = 0;
  private roundTimer: NodeJS.Timeout | null = null;
  private safetyTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private startPromise: Promise<void> | null = null;

  constructor(private readonly connectionString: string) {}

  /** Starts listening (once) and resolves when the hub has a position to hand out. */
  start(): Promise<void> {
    this.startPromise ??= (async () => {
      this.snapshot = await currentSnapshot();
      // Stopped while it read its first position: nothing to connect or keep polling.
      if (this.stopped) return;
      void this.connect();
      this.safetyTimer = setInterval(() => this.requestRound(), SAFETY_ROUND_MS);
      this.safetyTimer.unref();
    })().catch((err) => {
      this.startPromise = null;
      throw err;
    });
    return this.startPromise;
  }

  isListening(): boolean {
    return this.listening;
  }

  /** The position of everything this hub has fanned out so far. */
  position(): string | null {
    return this.snapshot && formatPosition(this.snapshot);
  }

  subscribe(fn: Subscriber): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  subscriberCount(): number {
    return this.subscribers.size;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of [this.roundTimer, this.reconnectTimer]) if (t) clearTimeout(t);
    if (this.safetyTimer) clearInterval(this.safetyTimer);
    const client = this.client;
    this.client = null;
    // Its listeners (the token cache) must stop trusting notifications that a stopped hub no longer hears.
    this.setListening(false);
    await client?.end().catch(() => undefined);
  }

  private broadcast(batch: LiveBatch) {
    for (const fn of this.subscribers) {
      try {
        fn(batch);
      } catch (err) {
        console.error('[live] a subscriber failed:', err);
      }
    }
  }

  /** Whether this hub has listened at all yet (a first connection still on its way is not a reconnection). */
  hasListened(): boolean {
    return this.everListened;
  }

  /** Resolves once the hub listens, or after `withinMs` (false) if it does not by then. */
  whenListening(withinMs: number): Promise<boolean> {
    if (this.listening) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        hubSignals.off('listening', on);
        resolve(false);
      }, withinMs);
      const on = (listening: boolean) => {
        if (!listening) return;
        clearTimeout(timer);
        hubSignals.off('listening', on);
        resolve(true);
      };
      hubSignals.on('listening', on);
    });
  }

  private setListening(listening: boolean) {
    if (this.listening === listening) return;
    this.listening = listening;
    if (listening) this.everListened = true;
    this.broadcast({ kind: 'status', listening });
    hubSignals.emit('listening', listening);
  }

  /** The counts every page shows, once for all of this instance's streams; null rather than failing the round. */
  private async readCounts(): Promise<CountsAnswer | null> {
    try {
      return exactAnswer(await maintainedStatusCounts());
    } catch (err) {
      console.warn(`[live] reading the status counts failed (pages will fetch them): ${oneLineError(err)}`);
      return null;
    }
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.connectionString, application_name: 'bridge:live', keepAlive: true });
    this.client = client;
    const lost = (why: unknown) => {
      if (this.client !== client) return;
      this.client = null;
      this.setListening(false);
      client.end().catch(() => undefined);
      if (this.stopped) return;
      const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this.attempt) * (0.5 + Math.random() / 2);
      this.attempt++;
      console.warn(`[live] listening connection lost (${why instanceof Error ? why.message : String(why)}); reconnecting in ${Math.round(delay)} ms`);
      this.reconnectTimer = setTimeout(() => void this.connect(), delay);
      this.reconnectTimer.unref();
    };
    client.on('error', lost);
    client.on('end', () => lost('connection ended'));
    client.on('notification', (msg) => {
      if (msg.channel === CHANGES_CHANNEL) this.requestRound();
      else if (msg.channel === AUTH_CHANNEL) hubSignals.emit('auth');
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}; LISTEN ${AUTH_CHANNEL}`);
      this.attempt = 0;
      this.setListening(true);
      // Whatever committed while nobody was listening is in the table: read it now.
      this.requestRound();
    } catch (err) {
      lost(err);
    }
  }

  private requestRound() {
    if (this.stopped) return;
    if (this.roundRunning || this.roundTimer) {
      this.roundWanted = true;
      return;
    }
    // After a failed round (database down?) back off instead of hammering it.
    const gap = this.failedRounds ? Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this.failedRounds) : ROUND_MIN_GAP_MS;
    const wait = Math.max(0, this.lastRoundAt + gap - Date.now());
    this.roundTimer = setTimeout(() => {
      this.roundTimer = null;
      void this.round();
    }, wait);
  }

  private async round() {
    if (!this.snapshot) return;
    this.roundRunning = true;
    this.roundWanted = false;
    try {
      const next = await changesSinceSnapshot(this.snapshot);
      this.snapshot = { maxId: next.maxId, xmin: next.xmin, xmax: next.xmax, xip: next.xip };
      this.failedRounds = 0;
      const position = formatPosition(next);
      if (next.overflow || next.events.length) {
        const counts = this.subscribers.size ? await this.readCounts() : null;
        if (next.overflow) this.broadcast({ kind: 'reset', position, lsn: next.lsn, counts });
        else this.broadcast({ kind: 'changes', position, events: next.events, counts });
      }
    } catch (err) {
      if (!this.failedRounds) console.error('[live] reading committed changes failed (will retry):', err);
      this.failedRounds++;
      this.roundWanted = true;
    } finally {
      this.lastRoundAt = Date.now();
      this.roundRunning = false;
      if (this.roundWanted) this.requestRound();
    }
  }
}

const globalForLive = globalThis as unknown as { bridgeLiveHub?: LiveHub };

/** The process's hub, started on first use. */
export async function liveHub(): Promise<LiveHub> {
  const hub = (globalForLive.bridgeLiveHub ??= new LiveHub(directDatabaseUrl()));
  await hub.start();
  return hub;
}

/**
 * Stops the process's hub, if one was started, and forgets it: the next liveHub() starts a new one. The console never
 * stops its hub; tests do, at the end of a file, so that the next file starts from a process without one.
 */
export async function stopLiveHub(): Promise<void> {
  const hub = globalForLive.bridgeLiveHub;
  globalForLive.bridgeLiveHub = undefined;
  await hub?.stop();
}

/** The position this process's hub has fanned out up to, when it is running; null otherwise (nothing is started). */
export function runningHubPosition(): string | null {
  return globalForLive.bridgeLiveHub?.position() ?? null;
}
