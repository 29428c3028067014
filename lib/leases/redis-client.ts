import { createHash } from 'node:crypto';
import {
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  createClient,
  DisconnectsClientError,
  ErrorReply,
  ReconnectStrategyError,
  SocketClosedUnexpectedlyError,
  SocketTimeoutError,
  TimeoutError,
} from 'redis';

/**
 * One node-redis client per URL and process (cached on globalThis, like the database client), connected on first
 * use. Redis being away is answered at once, never waited out: a first connection that fails is given up (the next
 * use tries afresh), and a command issued while a connected client is reconnecting fails immediately instead of
 * queueing until its timeout. Either way the caller gets RedisUnavailableError, which the lease manager and the
 * idempotency keys answer with their 503 (with Retry-After).
 */
function connect(url: string) {
  let connected = false;
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 2_000,
      // Once connected, reconnect for ever with backoff; before that, stop at the first failure.
      reconnectStrategy: (retries, cause) => (connected ? Math.min(50 * 2 ** retries, 2000) : cause),
    },
  });
  client.on('ready', () => {
    connected = true;
  });
  // Without a listener node-redis would crash the process on a connection error; commands still fail and say why.
  client.on('error', (err: unknown) => {
    if (process.env.NODE_ENV !== 'test') console.error('[redis]', (err as Error).message);
  });
  return client.connect().then(() => client);
}

/**
 * Redis could not be reached, or went away during a command: not the request's fault. A script either ran whole on
 * the server or not at all, but a reply lost with the connection leaves that unknown; callers say so.
 */
export class RedisUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`Redis is unavailable (${cause instanceof Error ? cause.message || cause.constructor.name : String(cause)})`, { cause });
    this.name = 'RedisUnavailableError';
  }
}

/** node-redis' own errors for a connection that is missing, closed, offline or too slow. */
const CONNECTION_ERRORS = [ClientClosedError, ClientOfflineError, ConnectionTimeoutError, DisconnectsClientError, ReconnectStrategyError, SocketClosedUnexpectedlyError, SocketTimeoutError, TimeoutError];
/** What the socket itself reports (Node's system error codes). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/**
 * Replies of a server that cannot serve right now (still loading its data, a replica without its primary, a
 * read-only replica after a failover). The first word of an error reply is Redis' protocol error code, as NOSCRIPT
 * is below, not prose.
 */
const UNAVAILABLE_REPLIES = new Set(['LOADING', 'MASTERDOWN', 'READONLY']);

export function isRedisUnavailable(err: unknown): boolean {
  if (err instanceof RedisUnavailableError) return true;
  if (CONNECTION_ERRORS.some((type) => err instanceof type)) return true;
  if (err instanceof ErrorReply) return UNAVAILABLE_REPLIES.has(err.message.split(' ', 1)[0]);
  return err instanceof Error && SOCKET_CODES.has((err as NodeJS.ErrnoException).code ?? '');
}

/** Runs a Redis call, turning Redis being away into RedisUnavailableError; anything else passes through. */
export async function onRedis<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw isRedisUnavailable(err) && !(err instanceof RedisUnavailableError) ? new RedisUnavailableError(err) : err;
  }
}

export type Redis = Awaited<ReturnType<typeof connect>>;

const globalForRedis = globalThis as unknown as { bridgeRedis?: Map<string, Promise<Redis>> };

export function redisClient(url: string): Promise<Redis> {
  globalForRedis.bridgeRedis ??= new Map();
  const known = globalForRedis.bridgeRedis.get(url);
  if (known) return known;
  const client = onRedis(() => connect(url));
  client.catch(() => globalForRedis.bridgeRedis?.delete(url));
  globalForRedis.bridgeRedis.set(url, client);
  return client;
}

export async function closeRedisClients(): Promise<void> {
  const clients = [...(globalForRedis.bridgeRedis?.values() ?? [])];
  globalForRedis.bridgeRedis?.clear();
  await Promise.all(clients.map((c) => c.then((r) => r.close()).catch(() => undefined)));
}

/** A Lua script run by its SHA-1 (EVALSHA), loaded again when the server does not know it (after a restart). */
export class LuaScript {
  private readonly sha: string;
  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    const options = { keys, arguments: args.map(String) };
    return onRedis(async () => {
      try {
        return await client.evalSha(this.sha, options);
      } catch (err) {
        // NOSCRIPT is Redis' reply prefix for an unknown script (its protocol's error code, not prose).
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return client.eval(this.source, options);
      }
    });
  }
}
