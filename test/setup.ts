import { afterAll, inject } from 'vitest';

process.env.DATABASE_URL = inject('databaseUrl');

afterAll(async () => {
  const { flushOutcomes } = await import('@/lib/intents/outcomes');
  const { disconnectDb } = await import('@/lib/db/client');
  await flushOutcomes().catch(() => undefined);
  await disconnectDb();
  const { closeRedisClients } = await import('@/lib/leases/redis-client');
  await closeRedisClients();
});
