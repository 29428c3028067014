import { env } from '@/lib/env';
import { OutboxRelay } from './relay';
import { configuredEventStream } from './stream';

/**
 * Starts this process's outbox relay from the configuration, or says why not. Call it from any long-running
 * process next to the database (npm start, npm run relay, the workers): relays share the work on their own.
 */
export function startRelayFromEnv(name: string, log: (line: string) => void = (line) => console.log(`[relay] ${line}`)): OutboxRelay | null {
  const config = env();
  if (!config.NATS_URL) {
    log('NATS_URL is not set: the outbox relay is off (events wait in the outbox until a relay runs)');
    return null;
  }
  // The relay LISTENs and holds its partitions with session advisory locks: a direct connection, not a pooler.
  const databaseUrl = process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is not set');
  log(`publishing the outbox to ${config.NATS_URL}`);
  return new OutboxRelay({
    databaseUrl,
    natsUrl: config.NATS_URL,
    stream: configuredEventStream(),
    name,
    pollMs: config.OUTBOX_POLL_MS,
    retentionHours: config.OUTBOX_RETENTION_HOURS,
    log,
  }).start();
}
