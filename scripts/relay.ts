/**
 * `npm run relay`: an outbox relay on its own (DATABASE_URL and NATS_URL required). Run as many as you like; they
 * share the outbox's partitions through Postgres. `npm start` runs one too when NATS_URL is set.
 */
import { hostname } from 'node:os';

async function main() {
  if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is not set');
  const { migrate } = await import('../lib/db/migrate');
  await migrate(process.env.DATABASE_URL);
  const { startRelayFromEnv } = await import('../lib/events/runner');
  const relay = startRelayFromEnv(`bridge-relay@${hostname()}:${process.pid}`);
  if (!relay) process.exit(1);
  const stop = async () => {
    await relay.stop();
    const { disconnectDb } = await import('../lib/db/client');
    await disconnectDb().catch(() => undefined);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

main().catch((err) => {
  console.error(`[relay] ${(err as Error).message}`);
  process.exit(1);
});
