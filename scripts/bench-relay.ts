/**
 * `npm run bench:relay`: the outbox relay's throughput — events per second published to NATS JetStream and marked,
 * with 1 and with 4 relay processes (`npm run relay`) draining the same backlog. Uses DATABASE_URL or a throw-away
 * embedded PostgreSQL, and a throw-away `nats-server -js` (or NATS_URL). EVENTS (default 20000) events over KEYS
 * (default 2000) intents are written first, then the relays start; the clock runs from the first event published
 * to the last one marked, so process start-up is not counted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';

const root = resolve(import.meta.dirname, '..');
const EVENTS = Number(process.env.EVENTS ?? 20_000);
const KEYS = Number(process.env.KEYS ?? 2_000);

async function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

async function startNats(): Promise<{ url: string; stop: () => void }> {
  if (process.env.NATS_URL) return { url: process.env.NATS_URL, stop: () => undefined };
  const bin = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find((b) => existsSync(b));
  if (!bin) throw new Error('no nats-server (apt-get install nats-server) and no NATS_URL');
  const dir = mkdtempSync(join(tmpdir(), 'bridge-bench-nats-'));
  const port = await freePort();
  const child = spawn(bin, ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 500));
  return {
    url: `nats://127.0.0.1:${port}`,
    stop: () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function run(client: pg.Client, databaseUrl: string, natsUrl: string, relays: number): Promise<number> {
  await client.query('TRUNCATE outbox_events');
  await client.query(
    `SELECT bridge_outbox_emit('evt.intent.status_changed', 'k' || (g % $2), 'bench', jsonb_build_object('n', g), NULL, g) FROM generate_series(1, $1) g`,
    [EVENTS, KEYS],
  );
  const children: ChildProcess[] = [];
  for (let i = 0; i < relays; i++) {
    children.push(
      spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'relay.ts')], {
        cwd: root,
        stdio: 'ignore',
        env: { ...process.env, DATABASE_URL: databaseUrl, NATS_URL: natsUrl, OUTBOX_POLL_MS: '50' },
      }),
    );
  }
  let started = 0;
  for (;;) {
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM outbox_events WHERE published_at IS NULL');
    const left = Number(rows[0].n);
    if (!started && left < EVENTS) started = performance.now();
    if (left === 0) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const seconds = (performance.now() - started) / 1000;
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
  return EVENTS / seconds;
}

async function main() {
  let databaseUrl = process.env.DATABASE_URL;
  const embedded = databaseUrl ? undefined : await startEmbeddedPostgres({ persistent: false, database: 'bridge_bench_relay' });
  databaseUrl ??= embedded!.url;
  const nats = await startNats();
  try {
    await migrate(databaseUrl);
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const results: string[] = [];
    for (const relays of [1, 4]) {
      const rate = await run(client, databaseUrl, nats.url, relays);
      results.push(`${relays} relay${relays === 1 ? '' : 's'}: ${Math.round(rate).toLocaleString('en')} events/s`);
      console.log(`[bench:relay] ${EVENTS} events over ${KEYS} keys, ${results[results.length - 1]}`);
    }
    await client.end();
  } finally {
    nats.stop();
    await embedded?.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
