import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort, startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';

/**
 * Everything the browser tests need, in order: a throw-away PostgreSQL, the migrations, a production build, and
 * `next start` on a free port with that database. The URLs go into this process's environment, which the test
 * workers inherit (seeding through the domain functions needs DATABASE_URL; `baseURL` comes from E2E_BASE_URL).
 * Returns the teardown: server first, then the database.
 */
const root = resolve(import.meta.dirname, '..');
const nextBin = join(root, 'node_modules', 'next', 'dist', 'bin', 'next');
const say = (line: string) => console.log(`[e2e] ${line}`);

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** The same rule as `npm start`: no build, or any source newer than it. */
function buildIsStale(): boolean {
  const stamp = join(root, '.next', 'BUILD_ID');
  if (!existsSync(stamp)) return true;
  const built = statSync(stamp).mtimeMs;
  const sources = ['app', 'components', 'lib', 'generated', 'next.config.js', 'package-lock.json', 'proxy.ts', 'instrumentation.ts'];
  return sources.some((p) => newestMtime(join(root, p)) > built);
}

async function waitForHealth(url: string, server: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) break;
    try {
      if ((await fetch(`${url}/api/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n') : '';
  throw new Error(`next start did not become healthy at ${url} (exit code ${server.exitCode}). Its last output:\n${tail}`);
}

function stopServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const force = setTimeout(() => server.kill('SIGKILL'), 10_000);
    server.once('exit', () => {
      clearTimeout(force);
      done();
    });
    server.kill('SIGTERM');
  });
}

export default async function globalSetup(): Promise<() => Promise<void>> {
  if (process.env.E2E_BASE_URL) {
    if (!process.env.DATABASE_URL) throw new Error('E2E_BASE_URL is set: set DATABASE_URL to the database that server uses, so tests can seed it.');
    say(`using the running console at ${process.env.E2E_BASE_URL}`);
    return async () => undefined;
  }

  let database: EmbeddedDb | undefined;
  let server: ChildProcess | undefined;
  const teardown = async () => {
    if (server) await stopServer(server);
    if (database) await database.stop().catch((err: unknown) => console.error('[e2e] the test PostgreSQL did not stop cleanly:', err));
  };

  try {
    const started = Date.now();
    database = await startEmbeddedPostgres({ persistent: false, database: 'bridge_e2e' });
    await migrate(database.url);
    say(`throw-away PostgreSQL on port ${database.port}, migrated (${Date.now() - started} ms)`);

    if (process.env.E2E_SKIP_BUILD === '1') say('E2E_SKIP_BUILD=1: using the existing build');
    else if (buildIsStale()) {
      say('building the console for production (next build)…');
      const build = spawnSync(process.execPath, [nextBin, 'build'], { cwd: root, stdio: 'inherit', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } });
      if (build.status !== 0) throw new Error('next build failed');
    } else say('the production build is up to date');

    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    mkdirSync(join(root, 'test-results'), { recursive: true });
    const logFile = join(root, 'test-results', 'next-server.log');
    const log = createWriteStream(logFile);
    server = spawn(process.execPath, [nextBin, 'start', '-p', String(port), '-H', '127.0.0.1'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        PORT: String(port),
        BRIDGE_ENV: process.env.BRIDGE_ENV ?? 'development',
        NODE_ENV: 'production',
        NEXT_TELEMETRY_DISABLED: '1',
      },
    });
    server.stdout?.pipe(log);
    server.stderr?.pipe(log);
    await waitForHealth(baseUrl, server, logFile);
    say(`next start is serving ${baseUrl} (server log: test-results/next-server.log)`);

    process.env.DATABASE_URL = database.url;
    process.env.E2E_BASE_URL = baseUrl;
    return teardown;
  } catch (err) {
    await teardown();
    throw err;
  }
}
