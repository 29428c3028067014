import { call, type Instance } from './api';

/**
 * Live across instances: a server-sent-events client on one instance watches an intent that a prober changes
 * through another instance, and measures from the writer's acknowledgement to the event's arrival. The stream is
 * resumed with Last-Event-ID whenever it ends (an instance restart, a maximum stream lifetime).
 */
type Waiter = { intentId: string; toStatus: string; resolve: (at: number) => void };

export class LiveProbe {
  readonly latenciesMs: number[] = [];
  missed = 0;
  private readonly waiters = new Set<Waiter>();
  private readonly abort = new AbortController();
  private lastEventId: string | null = null;
  private stopped = false;

  constructor(
    private readonly writer: Instance,
    private readonly watcher: Instance,
    private readonly token: string,
  ) {}

  /** Keeps a stream open on the watcher until stop(). */
  async listen(): Promise<void> {
    while (!this.stopped) {
      try {
        const res = await fetch(`${this.watcher.url}/api/events`, {
          headers: { authorization: `Bearer ${this.token}`, accept: 'text/event-stream', ...(this.lastEventId ? { 'last-event-id': this.lastEventId } : {}) },
          signal: this.abort.signal,
        });
        if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
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
      } catch {
        // The watcher went away or the run is over: reconnect (below) unless stopped.
      }
      if (!this.stopped) await new Promise((r) => setTimeout(r, 200));
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
    const { events } = JSON.parse(data) as { events: { intentId: string | null; toStatus: string | null }[] };
    for (const w of [...this.waiters]) {
      if (events.some((e) => e.intentId === w.intentId && e.toStatus === w.toStatus)) {
        this.waiters.delete(w);
        w.resolve(at);
      }
    }
  }

  /** Moves `intentId` back and forth (RECEIVED ⇄ FAILED) through the writer until stop(), measuring each change. */
  async probe(intentId: string, gapMs: number): Promise<void> {
    let status = 'RECEIVED';
    while (!this.stopped) {
      await new Promise((r) => setTimeout(r, gapMs));
      if (!this.writer.up || !this.watcher.up) continue;
      const target = status === 'RECEIVED' ? 'FAILED' : 'RECEIVED';
      let waiter!: Waiter;
      const seen = new Promise<number>((resolve) => {
        waiter = { intentId, toStatus: target, resolve };
        this.waiters.add(waiter);
      });
      const answer = await call(this.writer, this.token, 'POST', `/api/intents/${intentId}/status`, { status: target });
      const ackAt = performance.now();
      if (answer.status !== 200) {
        this.waiters.delete(waiter);
        // Unsure where the intent is now: read it back before the next move.
        const current = await call(this.writer, this.token, 'GET', `/api/intents/${intentId}`);
        if (current.status === 200) status = (current.body as { status: string }).status;
        continue;
      }
      status = target;
      const timeout = new Promise<null>((r) => setTimeout(() => r(null), 5_000));
      const at = await Promise.race([seen, timeout]);
      if (at === null) {
        this.waiters.delete(waiter);
        // Only a miss while both instances stayed up counts against the feed.
        if (this.writer.up && this.watcher.up) this.missed++;
        continue;
      }
      this.latenciesMs.push(Math.max(0, at - ackAt));
    }
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
  }
}
