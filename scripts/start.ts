/**
 * `npm start`: the whole console with one command.
 * - No DATABASE_URL: starts an embedded PostgreSQL (data kept in .data/postgres across runs), migrates, seeds demo
 *   data on first run. With DATABASE_URL: uses that database (migrates; seeds only with SEED_DEMO_DATA=true).
 * - Builds the app when there is no build or the sources are newer, then serves it (scripts/serve.ts: Next behind the
 *   console's front door) on PORT, bound to 127.0.0.1 unless HOST says otherwise (with a warning when it is exposed).
 * - With DATABASE_URL and no BRIDGE_ENV the console does not assume development (lib/env.ts) and says so.
 * - Ctrl-C stops the server and the embedded database cleanly.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { migrate } from '../lib/db/migrate';
import type { EmbeddedDbMessage } from './embedded-db';
import { buildIsStale, markBuiltAt, root, serverArgs } from './next-server';

const nextBin = join(root, 'node_modules', 'next', 'dist', 'bin', 'next');
const say = (line: string) => console.log(`[bridge] ${line}`);
const isLoopback = (host: string) => host === 'localhost' || host === '::1' || /^127\./.test(host);
const minutes = (ms: number) => (ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`);

type EmbeddedDb = { url: string; port: number; dataDir: string; process: ChildProcess };

/** The embedded PostgreSQL in its own process and process group (scripts/embedded-db.ts says why). */
async function startEmbeddedDb(dataDir: string): Promise<EmbeddedDb> {
  const child = fork(join(root, 'scripts', 'embedded-db.ts'), [], {
    cwd: root,
    detached: true,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, BRIDGE_DATA_DIR: dataDir },
  });
  const message = await new Promise<EmbeddedDbMessage>((resolveMessage, reject) => {
    child.once('message', (m) => resolveMessage(m as EmbeddedDbMessage));
    child.once('exit', (code) => reject(new Error(`the embedded PostgreSQL did not start (exit code ${code})`)));
  });
  if ('error' in message) throw new Error(message.error);
  if (message.note) say(message.note);
  return { ...message, process: child };
}

async function stopEmbeddedDb(db: EmbeddedDb): Promise<void> {
  if (db.process.exitCode !== null) return;
  const exited = new Promise((r) => db.process.once('exit', r));
  db.process.send('stop');
  await exited;
}

/**
 * `next build`, with what a person waiting needs: how long it took last time on this machine (or about how long a
 * first build takes), and the time so far every 30 s while Next prints nothing.
 */
async function build(): Promise<void> {
  const stampFile = join(root, '.data', 'last-build-ms');
  const last = existsSync(stampFile) ? Number(readFileSync(stampFile, 'utf8')) || 0 : 0;
  say(
    last
      ? `building the console (next build): the last build here took ${minutes(last)}…`
      : 'building the console (next build): a first build takes about 3 minutes on two cores, mostly silent, then a table of routes…',
  );
  const started = Date.now();
  const child = spawn(process.execPath, [nextBin, 'build'], { cwd: root, stdio: 'inherit', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } });
  const ticker = setInterval(() => say(`still building… ${minutes(Date.now() - started)} so far`), 30_000);
  const code = await new Promise<number | null>((r) => child.once('exit', r)).finally(() => clearInterval(ticker));
  if (code !== 0) throw new Error('next build failed');
  markBuiltAt(started);
  const took = Date.now() - started;
  mkdirSync(join(root, '.data'), { recursive: true });
  writeFileSync(stampFile, String(took));
  say(`built in ${minutes(took)}`);
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`next start exited with code ${child.exitCode}`);
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the console did not answer /api/health within 60 s');
}

type Config = ReturnType<typeof import('../lib/env').env>;
type Auth = Awaited<ReturnType<typeof import('../lib/auth/bootstrap').bootstrapAuth>>;

/** What this process started, so a stop (Ctrl-C, or a failure) ends all of it. */
type Running = { embedded?: EmbeddedDb; server?: ChildProcess; workers: ChildProcess[]; relay: { stop: () => Promise<void> } | null; stopping: boolean };

/** DATABASE_URL when set; otherwise the embedded PostgreSQL, which may be seeded with demo data unless SEED_DEMO_DATA=false. */
async function openDatabase(config: Config, running: Running): Promise<{ databaseUrl: string; seedAllowed: boolean }> {
  if (config.DATABASE_URL) return { databaseUrl: config.DATABASE_URL, seedAllowed: process.env.SEED_DEMO_DATA === 'true' };
  const dataDir = resolve(root, process.env.BRIDGE_DATA_DIR ?? '.data/postgres');
  say(`no DATABASE_URL: starting the embedded PostgreSQL (data in ${dataDir})`);
  running.embedded = await startEmbeddedDb(dataDir);
  say(`embedded PostgreSQL is up on 127.0.0.1:${running.embedded.port}`);
  return { databaseUrl: running.embedded.url, seedAllowed: process.env.SEED_DEMO_DATA !== 'false' };
}

function stopper(running: Running) {
  return async (code: number) => {
    if (running.stopping) return;
    running.stopping = true;
    say('stopping…');
    await Promise.all(
      running.workers.filter((w) => w.exitCode === null).map((w) => {
        w.kill('SIGTERM');
        return new Promise((r) => w.once('exit', r));
      }),
    );
    const server = running.server;
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    }
    await running.relay?.stop().catch(() => undefined);
    // Every pool this process opened closes before the database stops: the demo seed's pipeline runs leave
    // connections in the execution lock's pool, which the database's shutdown would otherwise cut, and say so.
    const { disconnectDb } = await import('../lib/db/client');
    const { disconnectLockDb } = await import('../lib/pipeline/lock');
    await disconnectLockDb().catch(() => undefined);
    await disconnectDb().catch(() => undefined);
    if (running.embedded) await stopEmbeddedDb(running.embedded);
    say(code === 0 ? 'stopped' : `stopped (exit code ${code})`);
    process.exit(code);
  };
}

/** Migrations, demo data on a fresh database when allowed, then the admin and tokens (lib/auth/bootstrap). */
async function prepareDatabase(databaseUrl: string, seedAllowed: boolean): Promise<Auth> {
  const { applied, alreadyApplied } = await migrate(databaseUrl);
  say(`migrations: ${applied.length} applied${applied.length ? ` (${applied.join(', ')})` : ''}, ${alreadyApplied} already in place`);
  const { isFreshDatabase, seedDemoData } = await import('../lib/seed/demo');
  const { flushOutcomes } = await import('../lib/intents/outcomes');
  if (seedAllowed && (await isFreshDatabase())) {
    say('first run: seeding demo intents…');
    const n = await seedDemoData(300, say);
    await flushOutcomes();
    say(`seeded ${n} demo intents in every status, with corrections`);
  }
  const { bootstrapAuth } = await import('../lib/auth/bootstrap');
  const auth = await bootstrapAuth();
  for (const line of auth.lines) say(line);
  return auth;
}

/** The server on PORT and HOST (loopback unless told otherwise), up once /api/health answers; returns its URL. */
async function startServer(config: Config, databaseUrl: string, running: Running, stop: (code: number) => Promise<void>): Promise<string> {
  const port = String(config.PORT);
  const host = process.env.HOST || '127.0.0.1';
  const url = `http://${isLoopback(host) ? 'localhost' : host.includes(':') ? `[${host}]` : host}:${port}`;
  if (!isLoopback(host)) {
    say(`WARNING: HOST=${host} exposes the console beyond this machine. Put it behind TLS (BRIDGE_ENV=production gives Secure cookies), and set TRUST_PROXY only behind a proxy that sets X-Forwarded-For.`);
  }
  // Node runs the server directly (no npx shell in between), so the signal we send reaches the server itself.
  const server = spawn(process.execPath, serverArgs, {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, DATABASE_URL: databaseUrl, BRIDGE_ENV: config.BRIDGE_ENV, PORT: port, HOST: host, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1' },
  });
  running.server = server;
  server.on('exit', (code) => {
    if (!running.stopping) {
      console.error(`[bridge] the console server exited (code ${code})`);
      void stop(code ?? 1);
    }
  });
  await waitForHealth(url, server);
  return url;
}

/** Workers beside the console (development only; WORKERS=0 for none): lib/workers, docs/WORKERS.md. */
function startWorkers(config: Config, databaseUrl: string, running: Running): void {
  if (config.BRIDGE_ENV !== 'development') return;
  for (let i = 0; i < config.WORKERS; i++) {
    // Node with tsx as a loader (not the tsx CLI): the SIGTERM we send reaches the worker itself.
    const worker = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'worker.ts')], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, DATABASE_URL: databaseUrl },
    });
    running.workers.push(worker);
  }
  if (config.WORKERS) say(`${config.WORKERS} worker(s) started beside the console (WORKERS=0 for none; \`npm run worker\` starts more)`);
}

function sayReady(url: string, config: Config, auth: Auth, built: boolean, embedded: EmbeddedDb | undefined): void {
  say(`Bridge Console is ready: ${url}  (environment: ${config.BRIDGE_ENV})`);
  // The build's output pushes the one-time password far up: it is said again here, where the URL is.
  const oneTime = auth.admin.created && auth.admin.passwordSource === 'generated' ? auth.admin.oneTimePassword : undefined;
  say(
    auth.admin.created
      ? `sign in at ${url}/sign-in as "${auth.admin.username}"${oneTime ? (built ? ` with the one-time password ${oneTime}` : ' with the one-time password above') : ''}`
      : `sign in at ${url}/sign-in (users are managed on /admin/users)`,
  );
  if (embedded) {
    say(`database: embedded PostgreSQL, data in ${embedded.dataDir} — Ctrl-C stops both`);
    // On-call needs a psql session into it now and then (to see or hold a lock): say how.
    say(`psql: psql '${embedded.url}'`);
  } else say('database: DATABASE_URL');
}

async function main() {
  const { env, environmentNote } = await import('../lib/env');
  const config = env();
  const note = environmentNote();
  if (note) say(note);
  const running: Running = { workers: [], relay: null, stopping: false };
  const { databaseUrl, seedAllowed } = await openDatabase(config, running);
  process.env.DATABASE_URL = databaseUrl;
  const stop = stopper(running);
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  try {
    const auth = await prepareDatabase(databaseUrl, seedAllowed);
    const built = buildIsStale();
    if (built) await build();
    const url = await startServer(config, databaseUrl, running, stop);
    startWorkers(config, databaseUrl, running);
    // The outbox relay runs here, beside the server: events leave for NATS JetStream when NATS_URL is set.
    const { startRelayFromEnv } = await import('../lib/events/runner');
    running.relay = startRelayFromEnv('bridge-console', (line) => say(`relay: ${line}`));
    sayReady(url, config, auth, built, running.embedded);
  } catch (err) {
    console.error(`[bridge] ${(err as Error).message}`);
    await stop(1);
  }
}

main().catch((err: unknown) => {
  console.error(`[bridge] ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
