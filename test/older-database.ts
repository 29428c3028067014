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
 *
 * `keep(label)` copies the database as it is now, and `restore(label)` puts that copy back in its place (same name,
 * same URL): tests that create and drop partitions each start from the same state, whichever ran before them.
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

  const kept = new Set<string>();
  const copyName = (label: string) => `${name}_${label}`;

  /**
   * A database is copied only while nobody is connected to it: buffered outcome counts are written first, then the
   * engine's pools are closed (they open again on their next query).
   */
  async function release(): Promise<void> {
    await flushOutcomes();
    await disconnectDb();
    await disconnectLockDb();
  }

  return {
    url,
    async keep(label: string): Promise<void> {
      await release();
      await admin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS "${copyName(label)}"`);
        // A template must have no session on it. The engine's pools are closed above; a pool this helper does not
        // know of (the read pool, the live hub) or an autovacuum worker may still be connected, and PostgreSQL
        // would refuse the copy after waiting for them. They are ended first: they reconnect when next needed.
        await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
        await c.query(`CREATE DATABASE "${copyName(label)}" TEMPLATE "${name}"`);
      });
      kept.add(label);
    },
    async restore(label: string): Promise<void> {
      await release();
      await admin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await c.query(`CREATE DATABASE "${name}" TEMPLATE "${copyName(label)}"`);
      });
    },
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
      await release();
      process.env.DATABASE_URL = workerUrl;
      await admin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        for (const label of kept) await c.query(`DROP DATABASE IF EXISTS "${copyName(label)}"`);
      });
      kept.clear();
    },
  };
}
