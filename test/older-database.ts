import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import pg from 'pg';
import { disconnectDb } from '@/lib/db/client';
import { migrate } from '@/lib/db/migrate';
import { flushOutcomes } from '@/lib/intents/outcomes';
import { disconnectLockDb } from '@/lib/pipeline/lock';

/**
 * A database of one test file's own, migrated only up to the migration `before` (plus `alsoApply`, later ones that
 * today's database functions read: those functions are repeatable files, applied in their current form), for tests
 * of a migration on a database that already has history. `open()` creates it and points the engine's pools at it
 * (they follow DATABASE_URL), so the file's commands write into it; `close()` points them back and drops it.
 */
export function olderDatabase(suffix: string, options: { before: string; alsoApply?: string[] }) {
  const workerUrl = process.env.DATABASE_URL!;
  const url = (() => {
    const u = new URL(workerUrl);
    u.pathname = `${u.pathname}_${suffix}`;
    return u.toString();
  })();
  const name = new URL(url).pathname.slice(1);

  /** A client on the worker's own database, for creating and dropping this one. */
  async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: workerUrl });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }

  return {
    url,
    async open(): Promise<void> {
      const source = join(process.cwd(), 'prisma', 'migrations');
      const migrations = await mkdtemp(join(tmpdir(), 'bridge-migrations-'));
      const older = (migration: string) => migration < options.before || (options.alsoApply ?? []).includes(migration);
      await cp(source, migrations, { recursive: true, filter: (src) => older(relative(source, src).split(sep)[0] ?? '') });
      await admin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await c.query(`CREATE DATABASE "${name}"`);
      });
      await migrate(url, migrations, join(process.cwd(), 'prisma', 'functions'));
      await rm(migrations, { recursive: true });
      await disconnectDb();
      process.env.DATABASE_URL = url;
    },
    async close(): Promise<void> {
      await flushOutcomes();
      await disconnectDb();
      await disconnectLockDb();
      process.env.DATABASE_URL = workerUrl;
      await admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}
