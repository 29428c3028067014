/**
 * The chaos clients' view of the console: plain HTTP against the JSON API of whichever instance is picked, with the
 * admin token. Every answer is kept as an observation; answers that promise something (a 2xx) become
 * acknowledgements the database must honour afterwards.
 */
export type Instance = { name: string; url: string; up: boolean };

export type Answer = { status: number; body: unknown; ms: number; headers: Headers } | { status: 'unreachable'; error: string; ms: number };

export async function call(instance: Instance, token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const started = performance.now();
  try {
    const res = await fetch(`${instance.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: kept as text, and judged as such
    }
    return { status: res.status, body: parsed, ms: performance.now() - started, headers: res.headers };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return { status: 'unreachable', error: cause ?? (err instanceof Error ? err.message : String(err)), ms: performance.now() - started };
  }
}

export function errorCode(answer: Answer): string | null {
  if (answer.status === 'unreachable') return null;
  const body = answer.body as { error?: { code?: unknown } } | null;
  return typeof body?.error?.code === 'string' ? body.error.code : null;
}

/**
 * 5xx answers the API documents, for failures that are the database's and not the request's: a correction whose
 * tries ran out, a deadlock that kept coming back, the database unreachable or too busy to answer in time. Anything
 * else 5xx is a broken promise.
 */
export const DOCUMENTED_5XX = new Set(['retries_exhausted', 'deadlock', 'deadlock_exhausted', 'database_unavailable', 'db_under_pressure', 'service_unavailable']);
