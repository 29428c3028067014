import { join } from 'node:path';
import { freePort, startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';
import { ensureBuild, root, startNext, type NextServer } from '../scripts/next-server';

/**
 * Everything the browser tests need, in order: a throw-away PostgreSQL, the migrations, a production build, and
 * the console's server (`scripts/serve.ts`) on a free port with that database. The URLs go into this process's environment, which the test
 * workers inherit (seeding through the domain functions needs DATABASE_URL; `baseURL` comes from E2E_BASE_URL).
 * Returns the teardown: server first, then the database.
 */
const say = (line: string) => console.log(`[e2e] ${line}`);

export default async function globalSetup(): Promise<() => Promise<void>> {
  if (process.env.E2E_BASE_URL) {
    if (!process.env.DATABASE_URL) throw new Error('E2E_BASE_URL is set: set DATABASE_URL to the database that server uses, so tests can seed it.');
    say(`using the running console at ${process.env.E2E_BASE_URL}`);
    return async () => undefined;
  }

  let database: EmbeddedDb | undefined;
  let server: NextServer | undefined;
  const teardown = async () => {
    await server?.stop();
    await database?.stop().catch((err: unknown) => console.error('[e2e] the test PostgreSQL did not stop cleanly:', err));
  };

  try {
    const started = Date.now();
    database = await startEmbeddedPostgres({ persistent: false, database: 'bridge_e2e', durable: false });
    await migrate(database.url);
    say(`throw-away PostgreSQL on port ${database.port}, migrated (${Date.now() - started} ms)`);

    ensureBuild(say, process.env.E2E_SKIP_BUILD === '1');

    // Development unless asked (E2E_BRIDGE_ENV), whatever the shell exports: the tests expect its badge and cookies.
    const bridgeEnv = process.env.E2E_BRIDGE_ENV ?? 'development';

    const logFile = join(root, 'test-results', 'next-server.log');
    server = await startNext({
      port: await freePort(),
      databaseUrl: database.url,
      logFile,
      // The soak asks for a full garbage collection (SIGUSR2) before it judges the server's memory.
      env: { BRIDGE_ENV: bridgeEnv, BRIDGE_GC_ON_SIGUSR2: '1' },
    });
    say(`the console server is serving ${server.url} (server log: test-results/next-server.log)`);

    process.env.DATABASE_URL = database.url;
    process.env.E2E_BASE_URL = server.url;
    process.env.E2E_SERVER_PID = String(server.pid);
    process.env.E2E_SERVER_LOG = logFile;
    // The workers sign in by planting the session cookie, whose name depends on the environment: same as the server.
    process.env.BRIDGE_ENV = bridgeEnv;
    return teardown;
  } catch (err) {
    await teardown();
    throw err;
  }
}
