import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, startEmbeddedPostgres, type EmbeddedDb } from '../../lib/db/embedded';
import { migrate } from '../../lib/db/migrate';
import { natsBinary, startTestNats, type TestNats } from '../../test/nats';
import { startStandby, type Standby } from '../../lib/db/standby';
import { startNext, type NextServer } from '../next-server';
import type { Instance } from './api';
import { startPgbouncer, type Bouncer } from './pgbouncer';
import { startWorker, type WorkerProcess } from './workers';

/** Polls until `check` holds or the time is up (the processes it waits for report nothing else). */
export async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

export type StackOptions = {
  logDir: string;
  pgbouncer: boolean;
  /** A hot standby of the database, serving the instances' reads (DATABASE_READ_URL). */
  replica: boolean;
  lockTimeoutMs: number;
  workerLeaseMs: number;
  say: (line: string) => void;
};

/**
 * The replica's settings for the instances: a short lag limit and a quick monitor, so that a replay paused by the
 * replica fault takes the replica out of rotation, and its resume brings it back, within a fault's turn.
 */
export const REPLICA_SETTINGS = { maxLagMs: 1_000, pollMs: 200 };

/**
 * Every process of a chaos run and how to (re)start it: the database (throw-away unless CHAOS_DATABASE_URL names
 * one), its hot standby, PgBouncer and NATS when asked for, the console instances and the workers. `teardown()` stops whatever was
 * started, also after a failure.
 */
export class ChaosStack {
  directUrl = '';
  token = '';
  embedded: EmbeddedDb | null = null;
  standby: Standby | null = null;
  /** The standby's address (DATABASE_READ_URL of the instances), known before it is up. */
  private readUrl: string | null = null;
  private standbyStarting: Promise<Standby> | null = null;
  private tearingDown: Promise<void> | null = null;
  private readonly starting = new Set<Promise<NextServer>>();
  bouncer: Bouncer | null = null;
  nats: TestNats | null = null;
  watcher: pg.Client | null = null;
  readonly servers: (NextServer | null)[] = [];
  readonly workers: (WorkerProcess | null)[] = [];
  instances: Instance[] = [];
  private ports: number[] = [];
  private launches: number[] = [];
  private workerStarts: number[] = [];

  constructor(private readonly o: StackOptions) {}

  /** The database, migrated, with one admin and one API token for every client, provisioned the way `npm start` does it. */
  async startDatabase(): Promise<void> {
    let directUrl = process.env.CHAOS_DATABASE_URL;
    // The standby is made by copying the primary's data folder: only a throw-away database of this run has one here.
    if (directUrl && this.o.replica) throw new Error('--replica needs the run’s own throw-away database: unset CHAOS_DATABASE_URL');
    if (!directUrl) {
      this.embedded = await startEmbeddedPostgres({ persistent: false, database: 'bridge_chaos' });
      directUrl = this.embedded.url;
      this.o.say(`throw-away PostgreSQL on port ${this.embedded.port}`);
    }
    this.directUrl = directUrl;
    await migrate(directUrl);
    this.token = `bc_${randomBytes(32).toString('base64url')}`;
    Object.assign(process.env, {
      DATABASE_URL: directUrl,
      CONSOLE_ADMIN_USER: 'chaos-admin',
      CONSOLE_ADMIN_PASSWORD: randomBytes(18).toString('base64url'),
      CONSOLE_BOOTSTRAP_TOKEN: this.token,
    });
    const { bootstrapAuth } = await import('../../lib/auth/bootstrap');
    await bootstrapAuth();
    const { disconnectDb } = await import('../../lib/db/client');
    await disconnectDb();
    if (this.o.replica && this.embedded) {
      // Made while the services and the instances start: its address is known now, and an instance that looks at it
      // before it answers keeps it out of rotation until it does. startInstances waits for it.
      const port = await freePort();
      this.readUrl = `postgresql://bridge:bridge@127.0.0.1:${port}${new URL(directUrl).pathname}`;
      const started = Date.now();
      this.standbyStarting = startStandby(this.embedded, { port, slot: 'bridge_chaos_replica' }).then((standby) => {
        this.standby = standby;
        this.o.say(`hot standby on port ${port} (made and up in ${Date.now() - started} ms), streaming from it: the instances read from it (out of rotation past ${REPLICA_SETTINGS.maxLagMs} ms of lag)`);
        return standby;
      });
      this.standbyStarting.catch(() => undefined);
    }
  }

  /** PgBouncer (when asked for) and NATS (when there are workers); false when NATS is required but missing. */
  async startServices(workerCount: number): Promise<boolean> {
    if (this.o.pgbouncer) {
      this.bouncer = await startPgbouncer(this.directUrl, { poolSize: 20, logFile: join(this.o.logDir, 'pgbouncer.log') });
      this.o.say(`PgBouncer ${this.bouncer.port} in transaction mode in front of it: the instances' and workers' queries go through it; LISTEN and the relays' session locks do not`);
    }
    if (workerCount > 0 && natsBinary) {
      this.nats = await startTestNats();
      this.o.say(`throw-away NATS JetStream at ${this.nats.url}: the workers' outbox relays publish to it`);
    } else if (workerCount > 0) {
      // CI installs it (.ci/run): there, a run without the relays and the NATS fault would prove less than it says.
      if (process.env.CI) {
        this.o.say('FAILED: no nats-server on this machine (Debian: apt-get install nats-server); the relays and the NATS fault cannot run');
        return false;
      }
      this.o.say('WARNING: no nats-server on this machine (Debian: apt-get install nats-server): the run goes on without relays, and the outbox is checked without the stream');
    }
    return true;
  }

  /** Settings every process of the run shares: the pooler (or not), the direct URL for LISTEN, short timeouts so the faults show within a short run. */
  private get shared() {
    return {
      DATABASE_DIRECT_URL: this.directUrl,
      DB_PREPARED_STATEMENTS: this.bouncer ? 'false' : 'true',
      LOCK_TIMEOUT_MS: String(this.o.lockTimeoutMs),
      BRIDGE_ENV: 'development',
    };
  }

  private get appUrl(): string {
    return this.bouncer?.url ?? this.directUrl;
  }

  async startInstances(count: number): Promise<void> {
    this.ports = await Promise.all(Array.from({ length: count }, () => freePort()));
    this.instances = this.ports.map((port, i) => ({ name: `instance ${String.fromCharCode(65 + i)}`, url: `http://127.0.0.1:${port}`, up: false }));
    this.launches = this.instances.map(() => 0);
    await Promise.all([...this.instances.map((_, i) => this.launch(i)), this.standbyStarting]);
  }

  async launch(i: number): Promise<void> {
    this.refuseWhileStopping();
    this.launches[i]++;
    const starting = startNext({
      port: this.ports[i],
      databaseUrl: this.appUrl,
      // One log per start: a restarted instance must not overwrite what its killed predecessor said.
      logFile: join(this.o.logDir, `instance-${String.fromCharCode(97 + i)}-${this.launches[i]}.log`),
      env: {
        ...this.shared,
        WORKERS: '0',
        ...(this.readUrl
          ? { DATABASE_READ_URL: this.readUrl, READ_REPLICA_MAX_LAG_MS: String(REPLICA_SETTINGS.maxLagMs), READ_REPLICA_POLL_MS: String(REPLICA_SETTINGS.pollMs) }
          : {}),
      },
    });
    // A start still under way when the run stops is waited for by the teardown, then stopped.
    this.starting.add(starting);
    try {
      const server = await starting;
      if (this.tearingDown) {
        await server.stop();
        throw new Error('the run is stopping');
      }
      this.servers[i] = server;
    } finally {
      this.starting.delete(starting);
    }
    this.instances[i].up = true;
  }

  /** Nothing new starts once the teardown has begun (a fault's restart racing a signal, say). */
  private refuseWhileStopping(): void {
    if (this.tearingDown) throw new Error('the run is stopping');
  }

  /** The session the runner watches the workers and the outbox with. */
  async connectWatcher(): Promise<pg.Client> {
    const watcher = new pg.Client({ connectionString: this.directUrl, application_name: 'bridge-chaos:watch' });
    watcher.on('error', () => undefined);
    await watcher.connect();
    this.watcher = watcher;
    return watcher;
  }

  async startWorkers(count: number): Promise<void> {
    this.workerStarts = Array.from({ length: count }, () => 0);
    await Promise.all(Array.from({ length: count }, (_, i) => this.spawnWorker(i)));
  }

  async spawnWorker(i: number): Promise<WorkerProcess> {
    this.refuseWhileStopping();
    const start = ++this.workerStarts[i];
    const logFile = join(this.o.logDir, `worker-${i + 1}-${start}.log`);
    const w = startWorker({ name: `worker ${i + 1}`, logFile, env: this.workerEnv() });
    this.workers[i] = w;
    // Up once it has registered itself (the registry row carries its pid).
    const registered = await until(async () => {
      if (w.exited()) return true;
      const { rows } = await this.watcher!.query('SELECT 1 FROM workers WHERE pid = $1 AND state = $2', [w.pid, 'running']);
      return rows.length > 0;
    }, 90_000);
    if (!registered || w.exited()) throw new Error(`${w.name} did not start (log: ${logFile})`);
    return w;
  }

  private workerEnv(): Record<string, string> {
    return {
      ...this.shared,
      DATABASE_URL: this.appUrl,
      ...(this.nats ? { NATS_URL: this.nats.url, OUTBOX_POLL_MS: '250' } : {}),
      WORKER_CONCURRENCY: '3',
      WORKER_LEASE_MS: String(this.o.workerLeaseMs),
      WORKER_HEARTBEAT_MS: '500',
      WORKER_RESCUE_MS: '500',
      WORKER_RETRY_BASE_MS: '200',
      WORKER_RETRY_JITTER_MS: '100',
      WORKER_RETRY_MAX_MS: '2000',
    };
  }

  /** Kills worker `i` while it holds claims (when it gets any within a few seconds), so a rescue has work to take over, and starts it again. */
  async restartWorker(i: number): Promise<{ killed: number; held: number; started: number }> {
    const victim = this.workers[i]!;
    const held = async () => {
      const { rows } = await this.watcher!.query<{ n: number }>(`SELECT count(*)::int AS n FROM intent_work WHERE state = 'running' AND claimed_by LIKE $1`, [`%:${victim.pid}:%`]);
      return rows[0].n;
    };
    await until(async () => (await held()) > 0, 3_000);
    const holding = await held();
    await victim.kill();
    return { killed: victim.pid, held: holding, started: (await this.spawnWorker(i)).pid };
  }

  /** Stops everything this stack started; a second call (a signal during a failure's teardown) waits for the first. */
  teardown(): Promise<void> {
    this.tearingDown ??= this.stopAll();
    return this.tearingDown;
  }

  private async stopAll(): Promise<void> {
    // An instance still starting stops itself once up (launch), before this goes on to the database under it.
    await Promise.allSettled([...this.starting]);
    for (const w of this.workers) await w?.kill().catch(() => undefined);
    for (const server of this.servers) await server?.stop().catch(() => undefined);
    await this.nats?.dispose().catch(() => undefined);
    await this.bouncer?.stop().catch(() => undefined);
    // A standby still coming up is waited for, then stopped (one that failed has stopped itself).
    await this.standbyStarting?.catch(() => undefined);
    await this.standby?.stop().catch(() => undefined);
    await this.embedded?.stop().catch(() => undefined);
  }
}
