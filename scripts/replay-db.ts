import { startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';

/**
 * The database a replay or bench script works on: the one named by `urlFromEnv`, or else a throw-away embedded
 * PostgreSQL started for this run only (deleted on stop). Migrations are applied either way (idempotent).
 */
export async function scriptDatabase(urlFromEnv: string | undefined, say: (line: string) => void): Promise<{ url: string; embedded: EmbeddedDb | null }> {
  let embedded: EmbeddedDb | null = null;
  let url = urlFromEnv;
  if (!url) {
    say('no database given: starting a throw-away embedded PostgreSQL for this run');
    embedded = await startEmbeddedPostgres({ persistent: false, database: 'bridge_bench' });
    url = embedded.url;
  }
  await migrate(url);
  process.env.DATABASE_URL = url;
  return { url, embedded };
}
