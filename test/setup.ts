import { afterAll, inject } from 'vitest';
import { workerDatabaseUrl } from './global-setup';
import { workerNumber } from './worker';

// Each worker runs its files against its own copy of the migrated template (test/global-setup.ts).
process.env.DATABASE_URL = workerDatabaseUrl(inject('databaseUrl'), workerNumber());

afterAll(async () => {
  const { flushOutcomes } = await import('@/lib/intents/outcomes');
  const { disconnectDb } = await import('@/lib/db/client');
  await flushOutcomes().catch(() => undefined);
  await disconnectDb();
  const { closeRedisClients } = await import('@/lib/leases/redis-client');
  await closeRedisClients();
});
