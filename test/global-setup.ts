import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';
import { redisServerInstalled, startRedisServer, type RedisServer } from './redis-server';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    /** '' when no Redis is available: the Redis suites skip, and the run says so loudly. */
    redisUrl: string;
  }
}

let server: EmbeddedDb | undefined;
let redis: RedisServer | undefined;

/**
 * One throw-away PostgreSQL for the run (TEST_DATABASE_URL uses an existing one instead), and a throw-away
 * redis-server when Debian's package is installed (else REDIS_URL, else the Redis suites are skipped).
 */
export async function setup(project: TestProject) {
  let url = process.env.TEST_DATABASE_URL;
  if (!url) {
    server = await startEmbeddedPostgres({ persistent: false, database: 'bridge_test' });
    url = server.url;
  }
  await migrate(url);
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
