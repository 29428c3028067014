import { createHash } from 'node:crypto';
import { createClient } from 'redis';

/**
 * One node-redis client per URL and process (cached on globalThis, like the database client), connected on first
 * use. node-redis reconnects by itself; a command issued while Redis is away fails after its command timeout.
 */
function connect(url: string) {
  const client = createClient({ url, socket: { reconnectStrategy: (retries) => Math.min(50 * 2 ** retries, 2000) } });
  // Without a listener node-redis would crash the process on a connection error; commands still fail and say why.
  client.on('error', (err: unknown) => {
    if (process.env.NODE_ENV !== 'test') console.error('[redis]', (err as Error).message);
  });
  return client.connect().then(() => client);
}

export type Redis = Awaited<ReturnType<typeof connect>>;

const globalForRedis = globalThis as unknown as { bridgeRedis?: Map<string, Promise<Redis>> };

export function redisClient(url: string): Promise<Redis> {
  globalForRedis.bridgeRedis ??= new Map();
  const known = globalForRedis.bridgeRedis.get(url);
  if (known) return known;
  const client = connect(url);
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
    try {
      return await client.evalSha(this.sha, options);
    } catch (err) {
      // NOSCRIPT is Redis' reply prefix for an unknown script (its protocol's error code, not prose).
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return client.eval(this.source, options);
    }
  }
}
