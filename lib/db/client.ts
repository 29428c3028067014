import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { type Prisma, PrismaClient } from '@/generated/prisma/client';
import { env } from '@/lib/env';
import { CapturingClient } from './pg-capture';

/**
 * The one database client. Created lazily so that scripts and tests can set DATABASE_URL first; cached on
 * globalThis so development hot reloads do not open a new pool each time.
 */
const globalForDb = globalThis as unknown as { bridgePrisma?: PrismaClient; bridgePool?: pg.Pool };

export function createPool(connectionString: string, max = env().DB_POOL_SIZE): pg.Pool {
  return new pg.Pool({ connectionString, max, application_name: 'bridge:console', Client: CapturingClient });
}

export function createPrisma(pool: pg.Pool): PrismaClient {
  const adapter = new PrismaPg(pool);
  return new PrismaClient({ adapter, transactionOptions: { maxWait: 15_000, timeout: 60_000 } });
}

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: start the console with `npm start`, which provides one.');
  return url;
}

export function db(): PrismaClient {
  if (!globalForDb.bridgePrisma) {
    globalForDb.bridgePool = createPool(databaseUrl());
    globalForDb.bridgePrisma = createPrisma(globalForDb.bridgePool);
  }
  return globalForDb.bridgePrisma;
}

export async function disconnectDb(): Promise<void> {
  const client = globalForDb.bridgePrisma;
  const pool = globalForDb.bridgePool;
  globalForDb.bridgePrisma = undefined;
  globalForDb.bridgePool = undefined;
  await client?.$disconnect();
  await pool?.end();
}

export type Db = PrismaClient;
export type Tx = Prisma.TransactionClient;
