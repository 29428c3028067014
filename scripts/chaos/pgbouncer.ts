import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../lib/db/embedded';

/**
 * A throw-away PgBouncer in transaction mode in front of one database, as a production deployment would run it.
 * Debian's 1.18 cannot route protocol-level prepared statements in this mode, so whatever connects through it must
 * turn them off (DB_PREPARED_STATEMENTS=false); LISTEN and session locks must bypass it (DATABASE_DIRECT_URL).
 */
export type Bouncer = { url: string; port: number; stop: () => Promise<void> };

export function pgbouncerBinary(): string | null {
  for (const candidate of [process.env.PGBOUNCER_BIN, '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer']) {
    if (candidate && spawnSync(candidate, ['--version']).status === 0) return candidate;
  }
  return null;
}

export async function startPgbouncer(databaseUrl: string, options: { poolSize: number; logFile: string }): Promise<Bouncer> {
  const bin = pgbouncerBinary();
  if (!bin) throw new Error('pgbouncer is not installed (Debian: apt-get install pgbouncer)');
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  const database = target.pathname.slice(1);
  const port = await freePort();
  // PgBouncer refuses to run as root; it drops to the `postgres` user (created by Debian's package) when asked.
  const dir = mkdtempSync(join(tmpdir(), 'bridge-pgbouncer-'));
  chmodSync(dir, 0o755);
  const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
  writeFileSync(join(dir, 'users.txt'), `${quote(user)} ${quote(password)}\n`, { mode: 0o644 });
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database} user=${user} password=${password}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize}`,
      'max_client_conn = 1000',
      // node-postgres may send these at start-up; the pooler cannot keep per-client settings in transaction mode.
      'ignore_startup_parameters = extra_float_digits,options',
      'server_reset_query =',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const args = [join(dir, 'pgbouncer.ini')];
  if (process.getuid?.() === 0) args.unshift('-u', 'postgres');
  const log = createWriteStream(options.logFile);
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const url = `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((done) => {
        child.once('exit', () => done());
        child.kill('SIGTERM');
      });
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const pg = (await import('pg')).default;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited with code ${child.exitCode} (log: ${options.logFile})`);
    const probe = new pg.Client({ connectionString: url });
    try {
      await probe.connect();
      await probe.query('SELECT 1');
      await probe.end();
      return { url, port, stop };
    } catch {
      await probe.end().catch(() => undefined);
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`pgbouncer did not accept connections on port ${port} (log: ${options.logFile})`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
