import { afterAll, inject } from 'vitest';
import { workerDatabaseUrl } from './global-setup';
import { workerNumber } from './worker';

// Each worker runs its files against its own copy of the migrated template (test/global-setup.ts).
process.env.DATABASE_URL = workerDatabaseUrl(inject('databaseUrl'), workerNumber());

// What the file's code opened on its own, in the process's lib modules, is closed when the file ends: files share a
// worker process, and the next one starts from a process without a live hub or open connections.
afterAll(async () => {
  const { stopLiveHub } = await import('@/lib/live/hub');
  await stopLiveHub();
  const { flushOutcomes } = await import('@/lib/intents/outcomes');
  const { disconnectDb } = await import('@/lib/db/client');
  await flushOutcomes().catch(() => undefined);
  await disconnectDb();
  const { closeRedisClients } = await import('@/lib/leases/redis-client');
  await closeRedisClients();
});
