import type { CountsAnswer } from '@/lib/counts/answer';
import type { LiveEvent, LiveMessage, LiveState } from './LiveProvider';

const RECONNECT_BASE_MS = 500;
const RECONNECT_MAX_MS = 15_000;

type StreamHandlers = {
  /** The last `id:` received: the position to resume from. */
  position: { current: string | null };
  deliver: (message: LiveMessage) => void;
  setState: (patch: Partial<LiveState>) => void;
};

/**
 * Opens /api/events and keeps it open: the browser's own reconnect sends `Last-Event-ID`; when the connection had to
 * be recreated (the server answered with an error), it goes again from the last position as `?since=`, after a
 * growing, jittered pause. Returns the function that closes it for good.
 */
export function openEventStream({ position, deliver, setState }: StreamHandlers): () => void {
  let source: EventSource | null = null;
  let retryTimer: ReturnType<typeof setTimeout> | null = null;
  let attempt = 0;
  let everOpened = false;
  let disposed = false;

  const remember = (event: MessageEvent) => {
    if (event.lastEventId) position.current = event.lastEventId;
  };
  const open = () => {
    const since = position.current;
    source = new EventSource(since ? `/api/events?since=${encodeURIComponent(since)}` : '/api/events');
    setState({ connection: everOpened ? 'reconnecting' : 'connecting' });
    source.addEventListener('ready', (event) => {
      remember(event as MessageEvent);
      attempt = 0;
      everOpened = true;
      setState({ connection: 'live' });
    });
    source.addEventListener('changes', (event) => {
      const e = event as MessageEvent<string>;
      remember(e);
      const data = JSON.parse(e.data) as { events: LiveEvent[]; counts?: CountsAnswer | null };
      deliver({ kind: 'changes', events: data.events, counts: data.counts, lsn: data.events.at(-1)?.lsn });
    });
    source.addEventListener('reset', (event) => {
      const e = event as MessageEvent<string>;
      remember(e);
      const data = (e.data ? JSON.parse(e.data) : {}) as { lsn?: string; counts?: CountsAnswer | null };
      deliver({ kind: 'reset', counts: data.counts, lsn: data.lsn });
    });
    source.addEventListener('status', (event) => {
      const data = JSON.parse((event as MessageEvent<string>).data) as { listening: boolean };
      setState({ serverListening: data.listening });
    });
    source.onerror = () => {
      if (disposed || !source) return;
      if (source.readyState === EventSource.CONNECTING) {
        // The browser reconnects by itself, sending Last-Event-ID.
        setState({ connection: 'reconnecting' });
        return;
      }
      // Closed for good (e.g. the server answered with an error): start over from our last position.
      source.close();
      source = null;
      setState({ connection: 'reconnecting' });
      const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** attempt++) * (0.5 + Math.random() / 2);
      retryTimer = setTimeout(open, delay);
    };
  };
  open();
  return () => {
    disposed = true;
    if (retryTimer) clearTimeout(retryTimer);
    source?.close();
  };
}
