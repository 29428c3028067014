import { oneLineError } from '@/lib/db/pg-capture';
import { DomainError, ValidationError } from '@/lib/shared/errors';
import { liveHub, type LiveBatch } from './hub';
import { changesSincePosition, formatPosition, positionSchema, type LiveEvent } from './positions';

/**
 * One client's server-sent event stream. Messages:
 * - `event: ready` (id = a position): connected; nothing to catch up on, or the catch-up follows.
 * - `event: changes` (id = position after them): `{ events: [{ id, intentId, action, toStatus, lsn }], counts? }` —
 *   `counts`, the status counts after them (lib/counts/answer.ts), read once by the hub for every stream; `lsn`, the
 *   primary's WAL position at or past the change's commit: a refetch the event causes sends it as `Bridge-Read-After`,
 *   so a read replica that has not replayed the change yet does not answer it (lib/db/read.ts).
 * - `event: reset` (id = position): more happened than is worth sending one by one: refetch everything
 *   (`{ lsn?, counts? }` as above).
 * - `event: status`: `{ listening }` — whether this server's database listener is connected.
 * - comment lines every HEARTBEAT_MS so proxies keep the connection and the browser notices a dead one.
 *
 * Resuming (`Last-Event-ID` header from the browser's own reconnect, or `?since=` from the page): the stream
 * subscribes to the hub first, then reads what committed since that position from the table, then forwards the
 * hub's batches that arrived meanwhile, skipping events the catch-up already sent. Nothing falls in between.
 */
const HEARTBEAT_MS = 15_000;
const RETRY_MS = 1_000;

/**
 * Lifecycle rules (docs/AUTH.md): a stream is re-authorised every REAUTH_MS with the credential that opened it, and
 * ends (`event: end`) when that no longer works or its user's roles changed — a revoked token, a disabled user, a
 * signed-out session; it ends after MAX_LIFETIME_MS anyway (the browser reconnects with Last-Event-ID and resumes
 * from its last position), and one user holds at most MAX_STREAMS_PER_USER at a time in this process.
 */
export const STREAM_LIMITS = { reauthMs: 5_000, maxLifetimeMs: 15 * 60_000, maxPerUser: 8 };

export type StreamOwner = {
  /** Whose stream this is, for the per-user cap. */
  userId: string;
  /** Whether the credential that opened the stream still may: checked every `reauthMs`. */
  stillAllowed: () => Promise<boolean>;
};

export type StreamLimits = typeof STREAM_LIMITS;

class TooManyStreamsError extends DomainError {
  readonly code = 'too_many_streams';
  readonly httpStatus = 429;
  readonly headers = { 'Retry-After': '5' };
  constructor(max: number) {
    super(`You already have ${max} live event streams open on this server; close a tab (or wait for one to end) and retry.`, { maxPerUser: max });
  }
}

const openByUser = new Map<string, number>();
let reauthorisations = 0;

/** Re-authorisations of open streams this process has completed, whatever their answer (tests wait on it). */
export function streamReauthorisations(): number {
  return reauthorisations;
}

/** Open event streams in this process (the metrics and the soak test read it). */
export function openStreamCount(): number {
  let n = 0;
  for (const count of openByUser.values()) n += count;
  return n;
}

/**
 * Where a stream resumes: the browser's own `Last-Event-ID` when it is a position (a header a proxy mangled is
 * ignored: the stream then starts from now, and the page refetches), else the `?since=` a caller passed. `since` is
 * input like any other, so one that is not a position is refused with a 400 naming it, not quietly ignored.
 */
export function parseResumePosition(lastEventId: string | null, since: string | null) {
  const fromQuery = since === null ? null : positionSchema.safeParse(since);
  if (fromQuery && !fromQuery.success) throw new ValidationError([{ field: 'since', message: 'must be a position this stream gave out (an event id such as 1234.5678)' }]);
  const fromHeader = lastEventId ? positionSchema.safeParse(lastEventId) : null;
  return fromHeader?.success ? fromHeader.data : (fromQuery?.data ?? null);
}

function message(event: string, data: unknown, id?: string): string {
  return `${id ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function batchMessage(batch: LiveBatch): string {
  switch (batch.kind) {
    case 'changes':
      return message('changes', batch.counts ? { events: batch.events, counts: batch.counts } : { events: batch.events }, batch.position);
    case 'reset':
      return message('reset', { ...(batch.lsn ? { lsn: batch.lsn } : {}), ...(batch.counts ? { counts: batch.counts } : {}) }, batch.position);
    case 'status':
      return message('status', { listening: batch.listening });
  }
}

export async function liveEventStream(
  resumeFrom: ReturnType<typeof parseResumePosition>,
  signal: AbortSignal,
  owner?: StreamOwner,
  limits: StreamLimits = STREAM_LIMITS,
): Promise<Response> {
  const userKey = owner?.userId ?? 'anonymous';
  if ((openByUser.get(userKey) ?? 0) >= limits.maxPerUser) throw new TooManyStreamsError(limits.maxPerUser);
  if (signal.aborted) return new Response(null, { status: 204 });
  const hub = await liveHub();
  const encoder = new TextEncoder();
  let cleanup = () => undefined as void;
  openByUser.set(userKey, (openByUser.get(userKey) ?? 0) + 1);

  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      let closed = false;
      const send = (text: string) => {
        if (closed) return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          cleanup();
        }
      };
      let pending: LiveBatch[] | null = [];
      const unsubscribe = hub.subscribe((batch) => {
        if (pending) pending.push(batch);
        else send(batchMessage(batch));
      });
      const heartbeat = setInterval(() => send(`: keep-alive ${Date.now()}\n\n`), HEARTBEAT_MS);
      const end = (reason: 'lifetime' | 'unauthorized') => {
        send(message('end', { reason }));
        cleanup();
      };
      const lifetime = setTimeout(() => end('lifetime'), limits.maxLifetimeMs);
      let checking = false;
      const reauth = owner
        ? setInterval(() => {
            if (checking || closed) return;
            checking = true;
            owner
              .stillAllowed()
              // A database hiccup is not a revocation: the next check decides.
              .then((ok) => ok || end('unauthorized'), () => undefined)
              .finally(() => {
                checking = false;
                reauthorisations++;
              });
          }, limits.reauthMs)
        : null;
      cleanup = () => {
        if (closed) return;
        closed = true;
        clearInterval(heartbeat);
        clearTimeout(lifetime);
        if (reauth) clearInterval(reauth);
        const left = (openByUser.get(userKey) ?? 1) - 1;
        if (left > 0) openByUser.set(userKey, left);
        else openByUser.delete(userKey);
        unsubscribe();
        try {
          controller.close();
        } catch {
          // already closed by the client going away
        }
      };
      signal.addEventListener('abort', cleanup, { once: true });

      send(`retry: ${RETRY_MS}\n\n`);
      send(message('status', { listening: hub.isListening() }));

      void (async () => {
        const sent = new Set<string>();
        try {
          if (resumeFrom) {
            const missed = await changesSincePosition(resumeFrom);
            const position = formatPosition(missed);
            send(message('ready', { resumed: true }, position));
            if (missed.overflow) send(message('reset', { lsn: missed.lsn }, position));
            else if (missed.events.length) {
              for (const e of missed.events) sent.add(e.id);
              send(message('changes', { events: missed.events }, position));
            }
          } else {
            send(message('ready', { resumed: false }, hub.position() ?? undefined));
          }
        } catch (err) {
          // Without the catch-up the client cannot know what it missed: tell it to refetch.
          console.error(`[live] catch-up after reconnect failed: ${oneLineError(err)}`);
          send(message('reset', {}, hub.position() ?? undefined));
        }
        const queued = pending ?? [];
        pending = null;
        for (const batch of queued) {
          if (batch.kind !== 'changes') {
            send(batchMessage(batch));
            continue;
          }
          const events: LiveEvent[] = batch.events.filter((e) => !sent.has(e.id));
          if (events.length) send(batchMessage({ ...batch, events }));
        }
      })();
    },
    cancel() {
      cleanup();
    },
  });

  return new Response(stream, {
    headers: {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    },
  });
}
