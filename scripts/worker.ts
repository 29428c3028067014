/**
 * `npm run worker`: one worker process (lib/workers/worker.ts) against DATABASE_URL. Run as many as you like, on
 * as many machines: they share the queue through Postgres alone. SIGTERM or Ctrl-C stops it gracefully.
 *
 * PIPELINE_BRIDGE_MODULES names modules to import first, for a deployment's own bridges (each calls
 * registerBridge from lib/pipeline/bridges.ts); PIPELINE_BRIDGES then names the BridgeSet in order.
 */
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

// Each run in flight uses a connection for its statements and the engine's commands; leave room for the claim
// loop, the heartbeat and the rescuer. Set before the configuration is first read.
const concurrency = Number(process.env.WORKER_CONCURRENCY ?? 4) || 4;
process.env.DB_POOL_SIZE ??= String(Math.min(200, concurrency + 4));
process.env.PIPELINE_LOCK_POOL_SIZE ??= String(Math.min(200, concurrency + 1));

const say = (line: string) => console.log(`[worker] ${line}`);

async function main() {
  if (!process.env.DATABASE_URL) {
    console.error('[worker] DATABASE_URL is not set. `npm start` prints the embedded database URL (the psql line); use that, or your own PostgreSQL.');
    process.exit(2);
  }
  const { env } = await import('../lib/env');
  for (const path of env().PIPELINE_BRIDGE_MODULES) await import(pathToFileURL(resolve(process.cwd(), path)).href);
  const { resolveBridgeSet } = await import('../lib/pipeline/bridges');
  const { workerConfig } = await import('../lib/workers/config');
  const { Worker } = await import('../lib/workers/worker');
  const config = workerConfig();
  resolveBridgeSet(config.bridges); // an unknown bridge stops the start, not the first run
  const worker = new Worker(config, say);
  // The outbox relay runs in every worker process too (when NATS_URL is set): relays share the outbox through Postgres.
  const { startRelayFromEnv } = await import('../lib/events/runner');
  const relay = startRelayFromEnv(`bridge-worker@${process.pid}`, (line) => say(`relay: ${line}`));
  // So does the lock history's sampler: whichever process holds its leadership samples for the whole database.
  const { startLockSampler, stopLockSampler } = await import('../lib/locks/history/sampler');
  startLockSampler((line) => say(`lock history: ${line}`));
  let stopping: Promise<void> | undefined;
  const stop = (signal: string) => {
    stopping ??= (async () => {
      say(`${signal}: stopping gracefully`);
      await worker.stop();
      await relay?.stop().catch(() => undefined);
      await stopLockSampler().catch(() => undefined);
      const { flushOutcomes } = await import('../lib/intents/outcomes');
      const { disconnectLockDb } = await import('../lib/pipeline/lock');
      const { disconnectDb } = await import('../lib/db/client');
      await flushOutcomes().catch(() => undefined);
      await disconnectLockDb().catch(() => undefined);
      await disconnectDb().catch(() => undefined);
      process.exit(0);
    })();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  await worker.start();
}

main().catch((err) => {
  console.error('[worker] could not start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
