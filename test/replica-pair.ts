import type pg from 'pg';
import { startEmbeddedPostgres } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';
import { startStandby } from '../lib/db/standby';

/**
 * A throw-away primary and a hot standby streaming from it, both the embedded PostgreSQL, for the suites that read
 * from replicas. How the standby is made is lib/db/standby.ts (the chaos run's `--replica` and the reads-on-a-replica
 * measurement use the same).
 */
export type ReplicaPair = {
  primaryUrl: string;
  replicaUrl: string;
  /** A client on the standby (pause and resume its replay). */
  replica: pg.Client;
  stop: () => Promise<void>;
};

export async function startReplicaPair(): Promise<ReplicaPair> {
  const primary = await startEmbeddedPostgres({ persistent: false, database: 'bridge_replicas', durable: false, extraFlags: ['-c', 'wal_level=replica', '-c', 'max_wal_senders=4'] });
  try {
    await migrate(primary.url);
    const standby = await startStandby(primary, {
      slot: 'bridge_test_replica',
      extraFlags: ['-c', 'shared_buffers=64MB'],
      log: (m) => process.env.REPLICA_LOG && console.error('[standby]', m),
    });
    return {
      primaryUrl: primary.url,
      replicaUrl: standby.url,
      replica: standby.client,
      stop: async () => {
        await standby.stop();
        await primary.stop();
      },
    };
  } catch (err) {
    // A primary whose standby did not come up is stopped too: a harness stops what it started.
    await primary.stop().catch(() => undefined);
    throw err;
  }
}
