import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * A production build and its server (scripts/serve.ts: the console's front door, its API router and Next) for harnesses (browser tests, the page-speed measurement): build when the
 * build is missing or older than a source (the same rule as `npm start`), serve on a given port with a given
 * database, wait for /api/health, stop with SIGTERM (the console flushes its counts on it).
 */
export const root = resolve(import.meta.dirname, '..');
const nextBin = join(root, 'node_modules', 'next', 'dist', 'bin', 'next');
/**
 * Node's flags for the console's server (`npm run serve` in package.json passes the same ones; a test holds the two
 * together). A larger young generation (`--max-semi-space-size`, in MB; V8's default is 16): a request in flight
 * holds its request and response objects for as long as it waits on the database, and with the default size a
 * busy server collected the young generation so often that those objects survived into the old generation, where
 * copying and collecting them was among the largest costs of an API command. With a
 * young generation eight times as large most of them die young, and the server's memory under load stays where it
 * was. docs/bench/2026-11-24-server-young-generation.md has the measurement.
 */
export const serverNodeFlags = ['--max-semi-space-size=128'];
/** The console's server (the front door, the API's router and Next: scripts/serve.ts), run through tsx like the other scripts. */
export const serverArgs = [...serverNodeFlags, '--import', 'tsx', join(root, 'scripts', 'serve.ts')];

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

export function buildIsStale(): boolean {
  const stamp = join(root, '.next', 'BUILD_ID');
  if (!existsSync(stamp)) return true;
  const built = statSync(stamp).mtimeMs;
  const sources = ['app', 'components', 'lib', 'generated', 'next.config.js', 'package-lock.json', 'proxy.ts', 'instrumentation.ts'];
  return sources.some((p) => newestMtime(join(root, p)) > built);
}

/**
 * Dates the build by when it started, not when it ended: a source saved while `next build` ran may not be in it, and
 * must leave the build stale for the next run rather than pass as built.
 */
export function markBuiltAt(startedMs: number): void {
  const stamp = join(root, '.next', 'BUILD_ID');
  if (existsSync(stamp)) utimesSync(stamp, new Date(startedMs), new Date(startedMs));
}

/** Builds unless the build is fresh (or `skip`); says what it did. */
export function ensureBuild(say: (line: string) => void, skip = false): void {
  if (skip) return say('skipping the build: using the existing one');
  if (!buildIsStale()) return say('the production build is up to date');
  say('building the console for production (next build)…');
  const started = Date.now();
  const build = spawnSync(process.execPath, [nextBin, 'build'], { cwd: root, stdio: 'inherit', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } });
  if (build.status !== 0) throw new Error('next build failed');
  markBuiltAt(started);
}

export type NextServer = {
  url: string;
  pid: number;
  logFile: string;
  stop: () => Promise<void>;
  /** SIGKILL: the process goes without flushing anything (the chaos run's crash). Resolves once it is gone. */
  kill: () => Promise<void>;
};

export async function startNext(options: { port: number; databaseUrl: string; logFile: string; env?: Record<string, string> }): Promise<NextServer> {
  const url = `http://127.0.0.1:${options.port}`;
  mkdirSync(dirname(options.logFile), { recursive: true });
  const log = createWriteStream(options.logFile);
  const server: ChildProcess = spawn(process.execPath, serverArgs, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      PORT: String(options.port),
      HOST: '127.0.0.1',
      NODE_ENV: 'production',
      NEXT_TELEMETRY_DISABLED: '1',
      ...options.env,
    },
  });
  server.stdout?.pipe(log);
  server.stderr?.pipe(log);

  const stop = (): Promise<void> => {
    if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve();
    return new Promise((done) => {
      const force = setTimeout(() => server.kill('SIGKILL'), 10_000);
      server.once('exit', () => {
        clearTimeout(force);
        done();
      });
      server.kill('SIGTERM');
    });
  };

  const kill = (): Promise<void> => {
    if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve();
    return new Promise((done) => {
      server.once('exit', () => done());
      server.kill('SIGKILL');
    });
  };

  const deadline = Date.now() + 90_000;
  let last = 'no answer yet';
  while (Date.now() < deadline && server.exitCode === null) {
    try {
      // Each try is bounded: a request stuck on a loaded machine must not hold the wait past its deadline.
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(5_000) });
      if (res.ok) return { url, pid: server.pid!, logFile: options.logFile, stop, kill };
      last = `answered ${res.status}`;
    } catch (err) {
      last = (err as { cause?: { code?: string } }).cause?.code ?? (err instanceof Error ? err.message : String(err));
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const exitCode = server.exitCode;
  await stop();
  const tail = existsSync(options.logFile) ? readFileSync(options.logFile, 'utf8').split('\n').slice(-40).join('\n') : '';
  throw new Error(
    `the console server did not become healthy at ${url} (${exitCode === null ? `still running after 90 s; /api/health: ${last}` : `exit code ${exitCode}`}). Its last output:\n${tail}`,
  );
}
