/**
 * The workers' benchmark: claims + completions per second of the queue with 4 worker processes over 10,000 intents,
 * beside the same work done by plain SQL — the bare claim and finish statements on the same table, 4 connections
 * each claiming 10 at a time — run side by side. `npm run bench` prints its row; `npm run bench:workers` runs it
 * alone. Options: --intents N, --workers N, --concurrency N, --bridges noop|default.
 *
 * The framework's run is a whole worker per process: claim batches, the execution lock, the run and step records,
 * heartbeats, and the finish, with a BridgeSet of one bridge that does nothing (`noop`), so what is measured is the
 * machinery; `--bridges default` runs the real pipeline (four engine commands per intent) instead.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';

const root = resolve(import.meta.dirname, '..');

export type WorkersBenchResult = {
  intents: number;
  workers: number;
  concurrency: number;
  bridges: string;
  frameworkPerSec: number;
  baselinePerSec: number;
  ratio: number;
};

async function insertIntents(client: pg.Client, n: number): Promise<void> {
  await client.query('TRUNCATE intents CASCADE');
  // The trigger queues each new RECEIVED intent (intent_work), as the engine's createIntent would.
  await client.query(`INSERT INTO intents (id, payload, source) SELECT gen_random_uuid(), jsonb_build_object('order', 'B-' || g, 'amount', g), 'bench' FROM generate_series(1, $1) g`, [n]);
  await client.query('ANALYZE intents, intent_work');
}

async function completed(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM intent_work WHERE state IN ('completed', 'failed')`);
  return Number(rows[0].n);
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** 4 worker processes; claiming is paused until all of them are up, so process start-up is not measured. */
async function frameworkRun(url: string, client: pg.Client, o: { intents: number; workers: number; concurrency: number; bridges: string }): Promise<number> {
  await insertIntents(client, o.intents);
  await client.query('TRUNCATE workers, worker_stats');
  await client.query('UPDATE worker_control SET paused = true');
  const children: ChildProcess[] = [];
  try {
    for (let i = 0; i < o.workers; i++) {
      children.push(
        spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'worker.ts')], {
          cwd: root,
          stdio: ['ignore', 'ignore', 'inherit'],
          env: {
            ...process.env,
            DATABASE_URL: url,
            WORKER_CONCURRENCY: String(o.concurrency),
            WORKER_BATCH_SIZE: String(o.concurrency),
            WORKER_POLL_MS: '20',
            PIPELINE_BRIDGES: o.bridges === 'default' ? 'input,normalize,feedback,output' : 'noop',
            PIPELINE_BRIDGE_MODULES: 'scripts/bench-bridges.ts',
          },
        }),
      );
    }
    await until('the workers to register', async () => Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM workers WHERE state = 'running'`)).rows[0].n) === o.workers, 60_000);
    const t0 = performance.now();
    await client.query('UPDATE worker_control SET paused = false');
    await until('the framework to finish', async () => (await completed(client)) >= o.intents, 30 * 60_000);
    return o.intents / ((performance.now() - t0) / 1000);
  } finally {
    await Promise.all(
      children.map((c) => {
        if (c.exitCode !== null) return undefined;
        c.kill('SIGTERM');
        return new Promise((r) => c.once('exit', r));
      }),
    );
    await client.query('UPDATE worker_control SET paused = false');
  }
}

const CLAIM = `
  WITH c AS (
    SELECT intent_id FROM intent_work
    WHERE state IN ('available', 'retryable') AND run_after <= now()
    ORDER BY run_after, intent_id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
  )
  UPDATE intent_work w SET state = 'running', attempt = w.attempt + 1, claim_token = nextval('intent_work_claim_token_seq'),
                           claimed_by = $2, claimed_at = now(), heartbeat_at = now(), lease_until = now() + interval '30 seconds'
  FROM c WHERE w.intent_id = c.intent_id
  RETURNING w.intent_id, w.claim_token`;
const FINISH = `UPDATE intent_work SET state = 'completed', finished_at = now(), lease_until = NULL WHERE intent_id = $1 AND claim_token = $2 AND state = 'running'`;

/** The same claims and finishes as bare statements: per worker one connection, a batch claimed, each finished. */
async function baselineRun(url: string, client: pg.Client, o: { intents: number; workers: number; concurrency: number }): Promise<number> {
  await insertIntents(client, o.intents);
  const conns = await Promise.all(
    Array.from({ length: o.workers }, async () => {
      const c = new pg.Client({ connectionString: url, application_name: 'bridge:bench-baseline' });
      await c.connect();
      return c;
    }),
  );
  try {
    const t0 = performance.now();
    await Promise.all(
      conns.map(async (c, i) => {
        for (;;) {
          const { rows } = await c.query<{ intent_id: string; claim_token: string }>(CLAIM, [o.concurrency, `baseline-${i}`]);
          if (rows.length === 0) return;
          for (const r of rows) await c.query(FINISH, [r.intent_id, r.claim_token]);
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    if ((await completed(client)) < o.intents) throw new Error('the baseline left work behind');
    return o.intents / elapsed;
  } finally {
    await Promise.all(conns.map((c) => c.end()));
  }
}

export async function benchWorkers(url: string, say: (line: string) => void, o: { intents?: number; workers?: number; concurrency?: number; bridges?: string } = {}): Promise<WorkersBenchResult> {
  const opts = { intents: o.intents ?? 10_000, workers: o.workers ?? 4, concurrency: o.concurrency ?? 10, bridges: o.bridges ?? 'noop' };
  const client = new pg.Client({ connectionString: url, application_name: 'bridge:bench' });
  await client.connect();
  try {
    say(`workers: baseline (bare claim + finish SQL, ${opts.workers} connections × batches of ${opts.concurrency}) over ${opts.intents} intents…`);
    const baselinePerSec = await baselineRun(url, client, opts);
    say(`workers: framework (${opts.workers} worker processes × ${opts.concurrency} in flight, bridges: ${opts.bridges}) over ${opts.intents} intents…`);
    const frameworkPerSec = await frameworkRun(url, client, opts);
    await client.query('TRUNCATE intents CASCADE');
    await client.query('TRUNCATE workers, worker_stats');
    return { ...opts, frameworkPerSec, baselinePerSec, ratio: frameworkPerSec / baselinePerSec };
  } finally {
    await client.end();
  }
}

export function formatWorkersBench(r: WorkersBenchResult): string[] {
  return [
    `Workers: ${r.intents} intents, ${r.workers} workers × ${r.concurrency} in flight, BridgeSet ${r.bridges}`,
    `  framework (claims + completions): ${Math.round(r.frameworkPerSec)} intents/s`,
    `  bare claim + finish SQL:          ${Math.round(r.baselinePerSec)} intents/s`,
    `  framework as a share of the bare SQL: ${Math.round(r.ratio * 100)} %`,
  ];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      intents: { type: 'string', default: '10000' },
      workers: { type: 'string', default: '4' },
      concurrency: { type: 'string', default: '10' },
      bridges: { type: 'string', default: 'noop' },
    },
  });
  const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);
  const { scriptDatabase } = await import('./replay-db');
  const { embedded, url } = await scriptDatabase(process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL, say);
  try {
    const result = await benchWorkers(url, say, { intents: Number(values.intents), workers: Number(values.workers), concurrency: Number(values.concurrency), bridges: values.bridges });
    for (const line of formatWorkersBench(result)) console.log(line);
    return 0;
  } finally {
    await embedded?.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error('[bench] failed:', err);
      process.exit(2);
    },
  );
}
