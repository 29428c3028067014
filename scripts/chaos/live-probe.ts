import { call, type Instance } from './api';

/**
 * Live across instances: a server-sent-events client on one instance (the watcher) waits for changes that a prober
 * commits through another (the writer), and measures from the writer's acknowledgement to the event's arrival.
 *
 * Each probe creates an intent: a change that is always new (a repeated status change may be answered "already
 * applied" and commit nothing, which the feed rightly never shows) and that no worker or client races with.
 * The event often arrives before the writer's answer does (the answer crosses the writer's HTTP stack, the event
 * the watcher's), so arrivals are kept by intent for a while and an answer first looks there.
 *
 * A change is a miss when its event does not arrive within MISS_AFTER_MS of its acknowledgement. When the watcher
 * was killed meanwhile, the event must still arrive (the stream resumes from its Last-Event-ID), within
 * MISS_AFTER_MS of the stream being back; such a change is counted apart and left out of the latency figures, which
 * would otherwise measure the restart. A writer killed after its answer changes nothing: the change is committed.
 */
const MISS_AFTER_MS = 5_000;
/** How long a change interrupted by an outage may wait for the stream to come back before it counts as a miss. */
const OUTAGE_GRACE_MS = 120_000;
/** Arrivals kept for answers still on their way. */
const ARRIVALS_KEPT = 5_000;

type Waiter = { intentId: string; resolve: (at: number) => void };

export class LiveProbe {
  readonly latenciesMs: number[] = [];
  /** Changes whose event never arrived (see above), with what the probe knew about each. */
  readonly misses: string[] = [];
  /** Changes acknowledged while the watcher was down or restarting, delivered once its stream was back. */
  deliveredAfterOutage = 0;
  private readonly waiters = new Set<Waiter>();
  /** Intents whose creation the stream has shown, with when (insertion order: the oldest go first). */
  private readonly arrived = new Map<string, number>();
  private readonly abort = new AbortController();
  private lastEventId: string | null = null;
  private stopped = false;
  private closed = false;
  /** When an instance was last taken down, and when the watcher's stream last (re)connected (performance.now()). */
  private lastOutageAt = -Infinity;
  private connectedAt = -Infinity;
  private connected = false;
  private readonly streamLog: string[] = [];

  constructor(
    private readonly writer: Instance,
    private readonly watcher: Instance,
    private readonly token: string,
  ) {}

  get missed(): number {
    return this.misses.length;
  }

  /** The runner says so whenever it takes an instance down (a kill, a restart); only the watcher's matter. */
  outage(instance: Instance): void {
    if (instance === this.watcher) this.lastOutageAt = performance.now();
  }

  private note(line: string) {
    this.streamLog.push(`${new Date().toISOString()} ${line}`);
    if (this.streamLog.length > 8) this.streamLog.shift();
  }

  /** Keeps a stream open on the watcher until stop(), resuming from the last position it was given. */
  async listen(): Promise<void> {
    while (!this.closed) {
      try {
        const res = await fetch(`${this.watcher.url}/api/events`, {
          headers: { authorization: `Bearer ${this.token}`, accept: 'text/event-stream', ...(this.lastEventId ? { 'last-event-id': this.lastEventId } : {}) },
          signal: this.abort.signal,
        });
        if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
        this.connected = true;
        this.connectedAt = performance.now();
        this.note(`stream open (resuming from ${this.lastEventId ?? 'now'})`);
        const decoder = new TextDecoder();
        let buffer = '';
        const reader = res.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            this.onMessage(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
        }
        this.note('stream ended by the server');
      } catch (err) {
        if (!this.closed) this.note(`stream failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      this.connected = false;
      if (!this.closed) await new Promise((r) => setTimeout(r, 200));
    }
  }

  private onMessage(text: string): void {
    const at = performance.now();
    let event = 'message';
    let data = '';
    for (const line of text.split('\n')) {
      if (line.startsWith('id: ')) this.lastEventId = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (event === 'reset') {
      // Too much at once for single events: a page refetches everything, so every awaited change is on screen now.
      for (const w of [...this.waiters]) {
        this.waiters.delete(w);
        w.resolve(at);
      }
      return;
    }
    if (event !== 'changes' || !data) return;
    const { events } = JSON.parse(data) as { events: { intentId: string | null; action: string }[] };
    for (const e of events) {
      if (e.action !== 'created' || !e.intentId || this.arrived.has(e.intentId)) continue;
      this.arrived.set(e.intentId, at);
      if (this.arrived.size > ARRIVALS_KEPT) this.arrived.delete(this.arrived.keys().next().value!);
    }
    for (const w of [...this.waiters]) {
      const seenAt = this.arrived.get(w.intentId);
      if (seenAt !== undefined) {
        this.waiters.delete(w);
        w.resolve(seenAt);
      }
    }
  }

  /**
   * Creates an intent through the writer every `gapMs` until stop() — also while the watcher is down, so that its
   * stream's resume has changes to deliver — and waits for each on the watcher's stream. Resolves once every change
   * it made is seen or counted as a miss.
   */
  async probe(gapMs: number): Promise<void> {
    const waits: Promise<void>[] = [];
    for (;;) {
      await new Promise((r) => setTimeout(r, gapMs));
      if (this.stopped) break;
      if (!this.writer.up) continue;
      const answer = await call(this.writer, this.token, 'POST', '/api/intents', { payload: { probe: true, at: Date.now() }, source: 'chaos-probe' });
      const ackAt = performance.now();
      // Not created, or not known to be: nothing to wait for (an unanswered creation may have committed; its event
      // then simply has no waiter).
      if (answer.status !== 201) continue;
      waits.push(this.awaitEvent((answer.body as { id: string }).id, ackAt));
    }
    await Promise.all(waits);
  }

  private async awaitEvent(intentId: string, ackAt: number): Promise<void> {
    let waiter!: Waiter;
    const seen = new Promise<number>((resolve) => {
      waiter = { intentId, resolve };
      const early = this.arrived.get(intentId);
      if (early !== undefined) resolve(early);
      else this.waiters.add(waiter);
    });
    // Interrupted: the watcher's stream was not live at the answer (the watcher is down, or its stream is
    // reconnecting after a restart), or the watcher went down before the event came. The event is then owed by the
    // stream's resume from its Last-Event-ID.
    const liveAtAck = this.watcher.up && this.connected && this.connectedAt > this.lastOutageAt;
    const interrupted = () => !liveAtAck || this.lastOutageAt >= ackAt;
    const streamBack = () => this.watcher.up && this.connected && this.connectedAt > this.lastOutageAt;
    let at: number | null = null;
    for (;;) {
      const deadline = interrupted() && streamBack() ? Math.max(ackAt, this.connectedAt) + MISS_AFTER_MS : ackAt + MISS_AFTER_MS;
      const wait = deadline - performance.now();
      if (wait > 0) at = await Promise.race([seen, new Promise<null>((r) => setTimeout(() => r(null), wait))]);
      if (at !== null) break;
      // Keep waiting while the stream is not back yet (bounded: a watcher that never comes back is a miss too).
      if (interrupted() && !streamBack() && performance.now() < ackAt + OUTAGE_GRACE_MS) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      if (interrupted() && performance.now() < Math.max(ackAt, this.connectedAt) + MISS_AFTER_MS) continue;
      break;
    }
    this.waiters.delete(waiter);
    if (at !== null) {
      if (interrupted()) this.deliveredAfterOutage++;
      else this.latenciesMs.push(Math.max(0, at - ackAt));
      return;
    }
    this.misses.push(
      `intent ${intentId} created through ${this.writer.name} (${new Date(Date.now() - (performance.now() - ackAt)).toISOString()}) not seen on ${this.watcher.name}'s stream` +
        `${interrupted() ? ' even after it resumed from an outage' : ` within ${MISS_AFTER_MS} ms`}; stream: ${this.streamLog.join(' | ')}`,
    );
  }

  /** No more probes; the change in flight is still waited for (await probe() before close()). */
  stop(): void {
    this.stopped = true;
  }

  /** Closes the stream. */
  close(): void {
    this.stopped = true;
    this.closed = true;
    this.abort.abort();
  }
}
