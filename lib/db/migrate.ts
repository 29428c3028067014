import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Applies prisma/migrations/<name>/migration.sql in name order and records each in `_prisma_migrations` the way
 * `prisma migrate deploy` does (same table, checksum = sha256 of the file, same advisory lock), so Prisma's own
 * tool can take over on a machine that has its engines.
 */
const PRISMA_MIGRATE_LOCK = 72707369;

export type MigrationResult = { applied: string[]; alreadyApplied: number; functions: string[] };

/**
 * The database functions (prisma/functions/*.sql): repeatable files of CREATE OR REPLACE, applied after the
 * migrations in name order, each again whenever its checksum changes. Recorded in a table of their own, so
 * `_prisma_migrations` holds exactly what `prisma migrate deploy` expects and Prisma's tool can still take over the
 * migrations (then start the console once, which runs this, to bring the functions up to date).
 */
async function applyFunctions(client: pg.Client, functionsDir: string): Promise<string[]> {
  await client.query(`CREATE TABLE IF NOT EXISTS "_bridge_functions" (
    "name" VARCHAR(255) PRIMARY KEY NOT NULL,
    "checksum" VARCHAR(64) NOT NULL,
    "applied_at" TIMESTAMPTZ NOT NULL DEFAULT now()
  )`);
  const { rows } = await client.query<{ name: string; checksum: string }>('SELECT name, checksum FROM "_bridge_functions"');
  const known = new Map(rows.map((r) => [r.name, r.checksum]));
  const files = (await readdir(functionsDir).catch(() => [] as string[])).filter((f) => f.endsWith('.sql')).sort();
  const applied: string[] = [];
  for (const file of files) {
    const sql = await readFile(join(functionsDir, file), 'utf8');
    const checksum = createHash('sha256').update(sql).digest('hex');
    if (known.get(file) === checksum) continue;
    try {
      // The file and its record in one transaction: a failed file leaves the previous functions in place.
      await client.query(`BEGIN;\n${sql}\n;INSERT INTO "_bridge_functions" (name, checksum) VALUES ('${file.replace(/'/g, "''")}', '${checksum}')
        ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now();\nCOMMIT;`);
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw new Error(`Database functions ${file} failed: ${(err as Error).message}`);
    }
    applied.push(file);
  }
  return applied;
}

export async function migrate(
  databaseUrl: string,
  migrationsDir = join(process.cwd(), 'prisma', 'migrations'),
  functionsDir = join(migrationsDir, '..', 'functions'),
): Promise<MigrationResult> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'bridge:migrate' });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0
    )`);
    const { rows } = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null }>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"',
    );
    const names = (await readdir(migrationsDir, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    const applied: string[] = [];
    let alreadyApplied = 0;
    for (const name of names) {
      const sql = await readFile(join(migrationsDir, name, 'migration.sql'), 'utf8');
      const checksum = createHash('sha256').update(sql).digest('hex');
      const records = rows.filter((r) => r.migration_name === name && !r.rolled_back_at);
      if (records.some((r) => r.finished_at)) {
        alreadyApplied++;
        continue;
      }
      if (records.length > 0) {
        throw new Error(`Migration ${name} failed earlier and was not rolled back; resolve it before starting (see _prisma_migrations.logs).`);
      }
      const id = randomUUID();
      await client.query('INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())', [id, checksum, name]);
      try {
        // One simple-protocol query: Postgres runs the whole script as one implicit transaction.
        await client.query(sql);
      } catch (err) {
        await client.query('UPDATE "_prisma_migrations" SET logs = $2 WHERE id = $1', [id, String((err as Error).message)]);
        throw new Error(`Migration ${name} failed: ${(err as Error).message}`);
      }
      await client.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
      applied.push(name);
    }
    return { applied, alreadyApplied, functions: await applyFunctions(client, functionsDir) };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK]).catch(() => undefined);
    await client.end();
  }
}
