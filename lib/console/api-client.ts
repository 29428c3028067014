import { parseLsn, READ_AFTER_HEADER } from '@/lib/db/lsn';

/**
 * The browser's one way to call the JSON API (and /api/console for what only the console needs). Every failure
 * becomes an `ApiError` carrying the error envelope (`code`, `message`, `details`) and the HTTP status, so pages
 * branch on the code rather than on message text; when no answer came at all the code is `network` and the status 0.
 */

export type FieldProblem = { field: string; message: string };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** No answer reached the browser (offline, server down, connection reset). */
  get isNetwork(): boolean {
    return this.code === NETWORK;
  }

  /** The database refused a read to protect itself: the page should poll less often, not report a fault. */
  get isPressure(): boolean {
    return this.status === 503 || this.code === 'db_under_pressure';
  }

  /** A validation refusal's field messages (`details.fields`), empty for any other error. */
  get fields(): FieldProblem[] {
    return (this.details as { fields?: FieldProblem[] } | undefined)?.fields ?? [];
  }
}

const NETWORK = 'network';
const NETWORK_MESSAGE = 'The console could not reach its server. Check your connection and try again.';
const SESSION_ENDED = 'Your session has ended. Sign in again to continue.';

type Envelope = { error?: { code?: string; message?: string; details?: unknown } } | null;

/** Retry once after a failure, but not after a refusal (4xx: a search too short or too slow stays so). */
export function retryUnlessRefused(failures: number, error: unknown): boolean {
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) return false;
  return failures < 1;
}

/**
 * The furthest WAL position the live feed has told this tab about (each event's `lsn`: at or past the commit of the
 * change it names). Every read the tab sends from then on carries it as `Bridge-Read-After`, so the refetch an event
 * causes is never answered by a read replica that has not replayed that change yet — the server sends the read to
 * the primary instead (docs/DEPLOY.md, "Read-your-writes") — and no later read shows an older state than one already
 * shown. Without read replicas the server ignores the header.
 */
let readAfter: { text: string; value: bigint } | null = null;

/** Raises the tab's read-after position to `lsn` (a live event's); an older or unreadable position changes nothing. */
export function readAfterLiveEvent(lsn: string | null | undefined): void {
  const value = parseLsn(lsn);
  if (value !== null && (readAfter === null || value > readAfter.value)) readAfter = { text: lsn!.trim(), value };
}

/** The position the tab's reads wait for, as sent (null before any event carried one). */
export function readAfterPosition(): string | null {
  return readAfter?.text ?? null;
}

async function send(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, { cache: 'no-store', ...init, headers: { accept: 'application/json', ...init.headers } });
  } catch (err) {
    // An abort is the caller's own doing (TanStack Query cancelling a stale request): pass it on untouched.
    if ((err as Error)?.name === 'AbortError') throw err;
    throw new ApiError(0, NETWORK, NETWORK_MESSAGE);
  }
}

async function answer<T>(res: Response): Promise<T> {
  if (res.ok) return (await res.json()) as T;
  const e = ((await res.json().catch(() => null)) as Envelope)?.error;
  if (res.status === 401) throw new ApiError(401, 'unauthenticated', SESSION_ENDED);
  throw new ApiError(res.status, e?.code ?? 'http_error', e?.message ?? `The server answered ${[res.status, res.statusText].filter(Boolean).join(' ')}.`, e?.details);
}

/** GET a JSON answer; `signal` lets TanStack Query cancel it. */
export async function getJson<T>(url: string, signal?: AbortSignal): Promise<T> {
  return answer<T>(await send(url, { signal, headers: readAfter ? { [READ_AFTER_HEADER]: readAfter.text } : undefined }));
}

/**
 * POST a JSON body. `keepalive` lets the request outlive the page (a release sent on `pagehide`, when a server
 * action may not get out any more).
 */
export async function postJson<T>(url: string, body: unknown, options: { keepalive?: boolean } = {}): Promise<T> {
  return answer<T>(await send(url, { method: 'POST', keepalive: options.keepalive, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
}
