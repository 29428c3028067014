import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '@/generated/prisma/client';
import { env } from '@/lib/env';

/**
 * The one database client. Created lazily so that scripts and tests can set DATABASE_URL first; cached on
 * globalThis so development hot reloads do not open a new pool each time.
 */
const globalForDb = globalThis as unknown as { bridgePrisma?: PrismaClient };

export function createPrisma(connectionString: string, max = env().DB_POOL_SIZE): PrismaClient {
  const adapter = new PrismaPg({ connectionString, max, application_name: 'bridge:console' });
  return new PrismaClient({ adapter, transactionOptions: { maxWait: 10_000, timeout: 30_000 } });
}

export function db(): PrismaClient {
  if (!globalForDb.bridgePrisma) {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('DATABASE_URL is not set: start the console with `npm start`, which provides one.');
    globalForDb.bridgePrisma = createPrisma(url);
  }
  return globalForDb.bridgePrisma;
}

export async function disconnectDb(): Promise<void> {
  const client = globalForDb.bridgePrisma;
  globalForDb.bridgePrisma = undefined;
  await client?.$disconnect();
}

export type Db = PrismaClient;
