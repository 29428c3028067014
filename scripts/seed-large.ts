/**
 * `npm run seed:large [-- --count 100000]`: adds a large, consistent data set (lib/seed/large.ts) for measuring
 * the console at scale. With DATABASE_URL it seeds that database; without, the embedded PostgreSQL of `npm start`
 * (data in .data/postgres — stop `npm start` first, one server per data folder). Migrations are applied first.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';

const root = resolve(import.meta.dirname, '..');
const say = (line: string) => console.log(`[seed:large] ${line}`);

const { values } = parseArgs({ options: { count: { type: 'string', default: '100000' } } });
const count = z.coerce.number().int().min(1).max(5_000_000).parse(values.count);

function postmasterRunning(dataDir: string): boolean {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return false;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function main() {
  let embedded: EmbeddedDb | undefined;
  let url = process.env.DATABASE_URL;
  if (!url) {
    const dataDir = resolve(root, process.env.BRIDGE_DATA_DIR ?? '.data/postgres');
    if (postmasterRunning(dataDir)) {
      throw new Error(`the embedded PostgreSQL in ${dataDir} is running (npm start?): stop it first, or pass its DATABASE_URL`);
    }
    embedded = await startEmbeddedPostgres({ dataDir, persistent: true });
    url = embedded.url;
    say(`embedded PostgreSQL (data in ${dataDir}) on port ${embedded.port}`);
  }
  process.env.DATABASE_URL = url;
  try {
    await migrate(url);
    const { seedLargeData } = await import('../lib/seed/large');
    const { db, disconnectDb } = await import('../lib/db/client');
    say(`adding ${count.toLocaleString('en')} intents…`);
    const r = await seedLargeData(count);
    const total = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM intents`;
    say(
      `added ${r.intents.toLocaleString('en')} intents, ${r.auditEvents.toLocaleString('en')} audit events, ` +
        `${r.corrections.toLocaleString('en')} corrections in ${(r.ms / 1000).toFixed(1)} s; the database now holds ${Number(total[0].n).toLocaleString('en')} intents`,
    );
    await disconnectDb();
  } finally {
    await embedded?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`[seed:large] ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
