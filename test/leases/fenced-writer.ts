/**
 * A lease holder in a process of its own, for the SIGSTOP test (test/leases/sigstop.test.ts). It acquires the lease,
 * reads the counter, says so on stdout, keeps its lease alive with a refresh timer (as a careful holder does), and
 * writes `counter + 1` when told to on stdin — believing it still holds the lease, whatever happened meanwhile.
 *
 * argv: resource intentId ttlMs fencing(on|off) backend(postgres|redis) [redisUrl]
 */
import { createInterface } from 'node:readline';
import { disconnectDb } from '@/lib/db/client';
import { reevaluateIntent } from '@/lib/intents/commands';
import { DomainError } from '@/lib/shared/errors';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { selectIntent } from '@/lib/intents/repository';
import { db } from '@/lib/db/client';
import { PostgresLeases } from '@/lib/leases/postgres';
import { RedisLeases } from '@/lib/leases/redis';
import { closeRedisClients } from '@/lib/leases/redis-client';

const [resource, intentId, ttlArg, fencingArg, backendName, redisUrl] = process.argv.slice(2);
const ttlMs = Number(ttlArg);
const leases = backendName === 'redis' ? new RedisLeases(redisUrl) : new PostgresLeases();
const say = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);

async function main() {
  let grant = await leases.acquire(resource, 'paused-writer', ttlMs);
  while (!grant.acquired) grant = await leases.acquire(resource, 'paused-writer', ttlMs);
  const token = grant.token;
  const intent = await db().$transaction((tx) => selectIntent(tx, intentId));
  const read = Number((intent!.payload as { counter?: number }).counter ?? 0);
  const refresher = setInterval(() => void leases.refresh(resource, 'paused-writer', token, ttlMs).catch(() => undefined), Math.max(10, ttlMs / 3));
  say({ acquired: token, read });

  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line.trim() !== 'write') continue;
    try {
      const result = await reevaluateIntent(
        {
          id: intentId,
          diff: { counter: read + 1, lastWriter: `paused-writer#${token}` },
          source: 'sigstop-test',
          reason: 'increment under the lease',
          ...(fencingArg === 'on' ? { fencing: { resource, token } } : {}),
        },
        { name: 'paused-writer' },
      );
      say({ written: result.version });
    } catch (err) {
      say({ refused: err instanceof DomainError ? err.code : String(err) });
    }
    break;
  }
  clearInterval(refresher);
  await flushOutcomes().catch(() => undefined);
  await disconnectDb();
  await closeRedisClients();
}

main().catch((err: unknown) => {
  say({ crashed: String(err) });
  process.exit(1);
});
