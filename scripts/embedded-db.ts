/**
 * `npm start`'s embedded PostgreSQL, in a process of its own that `scripts/start.ts` starts in a new process group.
 * Ctrl-C in a terminal signals the whole foreground group: were the database in it, it would shut down at once,
 * under the worker and the server still finishing their work (their last writes failing, a worker left "lost"
 * instead of "stopped"). Out of the group, it stops when start.ts says so, after everything else, or when start.ts
 * is gone (the IPC channel closes).
 *
 * The port is kept in the data folder and used again on the next start while it is free, so the `psql` line
 * printed once keeps working; EMBEDDED_PG_PORT pins it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { portIsFree, startEmbeddedPostgres } from '../lib/db/embedded';

export type EmbeddedDbMessage = { url: string; port: number; dataDir: string; note?: string } | { error: string };

const send = (message: EmbeddedDbMessage) => process.send?.(message);

async function main() {
  const dataDir = process.env.BRIDGE_DATA_DIR!;
  const portFile = join(dataDir, 'bridge-console.port');
  const pinned = process.env.EMBEDDED_PG_PORT ? Number(process.env.EMBEDDED_PG_PORT) : undefined;
  const remembered = !pinned && existsSync(portFile) ? Number(readFileSync(portFile, 'utf8').trim()) || undefined : undefined;
  const reuse = remembered !== undefined && (await portIsFree(remembered));
  const db = await startEmbeddedPostgres({
    dataDir,
    port: pinned ?? (reuse ? remembered : undefined),
    persistent: true,
    log: process.env.BRIDGE_PG_LOG ? (m) => process.stderr.write(String(m)) : undefined,
  });
  if (!pinned) writeFileSync(portFile, `${db.port}\n`);
  const note = remembered !== undefined && !reuse ? `port ${remembered} (the last run's) is taken: now on ${db.port}, so the psql line changed` : undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= db.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error('[bridge] embedded PostgreSQL did not stop cleanly:', err);
        process.exit(1);
      },
    ));
  process.on('message', (m) => m === 'stop' && void stop());
  process.on('disconnect', () => void stop());
  send({ url: db.url, port: db.port, dataDir: db.dataDir, note });
}

main().catch((err: unknown) => {
  send({ error: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
