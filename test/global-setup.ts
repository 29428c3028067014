import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

let server: EmbeddedDb | undefined;

/** One throw-away PostgreSQL for the run (TEST_DATABASE_URL uses an existing one instead). */
export async function setup(project: TestProject) {
  let url = process.env.TEST_DATABASE_URL;
  if (!url) {
    server = await startEmbeddedPostgres({ persistent: false, database: 'bridge_test' });
    url = server.url;
  }
  await migrate(url);
  project.provide('databaseUrl', url);
}

export async function teardown() {
  await server?.stop();
}
