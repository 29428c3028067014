import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';
import { redisServerInstalled, startRedisServer, type RedisServer } from './redis-server';
import { testWorkers } from './workers-count';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The migrated template; each test worker runs against its own copy (`workerDatabaseUrl`). */
    databaseUrl: string;
    /** '' when no Redis is available: the Redis suites skip, and the run says so loudly. */
    redisUrl: string;
  }
}

let server: EmbeddedDb | undefined;
let redis: RedisServer | undefined;

/** The database a worker's files run against: the template's name with the worker's number. */
export function workerDatabaseUrl(templateUrl: string, worker: number): string {
  const url = new URL(templateUrl);
  url.pathname = `${url.pathname}_w${worker}`;
  return url.toString();
}

/**
 * One throw-away PostgreSQL for the run (TEST_DATABASE_URL uses an existing one instead), and a throw-away
 * redis-server when Debian's package is installed (else REDIS_URL, else the Redis suites are skipped).
 *
 * Test files reset the database between tests, so two files must never share one: the template is migrated once and
 * copied for each worker (CREATE DATABASE … TEMPLATE copies files, far quicker than migrating again), and each
 * worker's files use their own copy and their own Redis database number.
 */
export async function setup(project: TestProject) {
  let url = process.env.TEST_DATABASE_URL;
  if (!url) {
    server = await startEmbeddedPostgres({ persistent: false, database: 'bridge_test', durable: false });
    url = server.url;
  }
  await migrate(url);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const template = new URL(url).pathname.slice(1);
    for (let worker = 1; worker <= testWorkers(); worker++) {
      const name = new URL(workerDatabaseUrl(url, worker)).pathname.slice(1);
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
    }
  } finally {
    await admin.end();
  }
  project.provide('databaseUrl', url);

  let redisUrl = '';
  if (redisServerInstalled()) {
    redis = await startRedisServer();
    redisUrl = redis.url;
  } else if (process.env.REDIS_URL) {
    redisUrl = process.env.REDIS_URL;
  } else {
    console.warn(
      '\n' +
        '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' +
        '!!  THE REDIS SUITES DID NOT RUN: no redis-server on this machine and no REDIS_URL.                  !!\n' +
        '!!  Install it (apt-get install -y redis-server) or set REDIS_URL=redis://… and run npm test again.  !!\n' +
        '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n',
    );
  }
  project.provide('redisUrl', redisUrl);
}

export async function teardown() {
  await redis?.stop();
  await server?.stop();
}
