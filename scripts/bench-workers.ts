/**
 * The workers' benchmark, side by side in one run on one database, 4 processes × 10 in flight over 10,000 items:
 * the bare claim and finish statements (4 connections, batches of 10, one finish per item); graphile-worker 0.17.3 in
 * its fastest setup on Node 20 (a local queue of 10, completions batched with no delay) with a task that does
 * nothing, and the same graphile-worker carrying this project's pipeline (a job per intent, each running the no-op
 * bridge through runPipeline: what a team would get by putting the pipeline on graphile-worker instead of on the
 * workers); the workers with a BridgeSet of one bridge that does nothing (`noop`: the machinery alone — claims, run
 * and step records, heartbeats, finishes); the workers with the default four bridges (four engine commands per
 * intent) beside the engine's own status-update rate; and the pickup latency (creation → claim) with idle workers.
 * `npm run bench` prints its rows; `npm run bench:workers` runs it alone. Options: --intents N, --workers N,
 * --concurrency N, --rounds N (the median of each row), --pickups N.
 *
 * Every queue starts the same way: its items are in the table before the clock starts, the processes are up and
 * idle, and the clock starts with the statement that makes the items due (the workers' claiming resumed;
 * graphile-worker's jobs' run_at moved to now, with its own wake-up notification).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';

const root = resolve(import.meta.dirname, '..');

type Options = { intents: number; workers: number; concurrency: number };

export type WorkersBenchResult = Options & {
  rounds: number;
  /** Items per second, the median of the rounds. */
  baselinePerSec: number;
  graphileWorkerPerSec: number;
  /** graphile-worker running each intent through the pipeline with the no-op bridge, one job per intent. */
  graphilePipelinePerSec: number;
  frameworkPerSec: number;
  defaultBridgesPerSec: number;
  statusUpdatesPerSec: number;
  /** Creation → claim, idle workers, in milliseconds. */
  pickup: { n: number; p50Ms: number; p95Ms: number };
  /** The no-op workers as a share of graphile-worker and of the bare SQL. */
  ratio: number;
  baselineRatio: number;
};

export async function insertIntents(client: pg.Client, n: number): Promise<void> {
  await client.query('TRUNCATE intents CASCADE');
  // The trigger queues each new RECEIVED intent (intent_work), as the engine's createIntent would.
  await client.query(`INSERT INTO intents (id, payload, source) SELECT gen_random_uuid(), jsonb_build_object('order', 'B-' || g, 'amount', g), 'bench' FROM generate_series(1, $1) g`, [n]);
  await client.query('ANALYZE intents, intent_work');
}

async function completed(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM intent_work WHERE state IN ('completed', 'failed')`);
  return Number(rows[0].n);
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, everyMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** NaN for no samples (written as null in --json). */
const percentile = (xs: number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] : Number.NaN);

function spawnScript(script: string, env: Record<string, string>, stdout: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', script)], { cwd: root, stdio: ['ignore', stdout, 'inherit'], env: { ...process.env, ...env } });
}

/**
 * Rejects when one of a row's processes exits before the row is done (they are stopped only after it): a queue whose
 * process died would otherwise leave its items unfinished and the benchmark waiting for them.
 */
function exitOfAny(children: ChildProcess[], what: string): Promise<never> {
  return new Promise((_, reject) => {
    for (const child of children) {
      child.once('exit', (code, signal) => reject(new Error(`${what}: a process exited (${signal ?? `code ${code}`}) before its items were done; its error is printed above`)));
    }
  });
}

/**
 * The connections a row may open at once, against what the server allows: graphile-worker carrying the pipeline is
 * the largest, its own pool beside the pipeline's two (statements, and the execution locks held for a run's length).
 * A server that runs out refuses the connection, which graphile-worker reports when it cannot complete a batch.
 */
async function warnOnConnections(client: pg.Client, o: Options, say: (line: string) => void): Promise<void> {
  const perProcess = GRAPHILE_POOL + 2 * o.concurrency;
  const { rows } = await client.query<{ max: number; used: number }>(
    `SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int AS max, (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend') AS used`,
  );
  const { max, used } = rows[0];
  if (o.workers * perProcess > max - used) {
    say(
      `warning: graphile-worker carrying the pipeline may open up to ${o.workers * perProcess} connections (${o.workers} processes × ${perProcess}), and this server has ${max - used} free (max_connections); raise it, or leave BENCH_DATABASE_URL unset for a throw-away server`,
    );
  }
}

async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map((c) => {
      if (c.exitCode !== null) return undefined;
      c.kill('SIGTERM');
      return new Promise((r) => c.once('exit', r));
    }),
  );
}

/**
 * The workers' processes, up and idle (claiming paused) before the clock starts; resumed with the wake-up
 * notification the console's resume sends. With `pickups`, once the intents are done and the workers idle again,
 * that many intents are created one by one through the engine and the time from each creation to its claim is read
 * from the rows (both are the database's clock).
 */
async function frameworkRun(url: string, client: pg.Client, o: Options & { bridges: 'noop' | 'default'; pickups: number }): Promise<{ perSec: number; pickupMs: number[] }> {
  await insertIntents(client, o.intents);
  await client.query('TRUNCATE workers, worker_stats');
  await client.query('UPDATE worker_control SET paused = true');
  const children: ChildProcess[] = [];
  try {
    for (let i = 0; i < o.workers; i++) {
      children.push(
        spawnScript('worker.ts', {
          DATABASE_URL: url,
          WORKER_CONCURRENCY: String(o.concurrency),
          WORKER_BATCH_SIZE: String(o.concurrency),
          PIPELINE_BRIDGES: o.bridges === 'default' ? 'input,normalize,feedback,output' : 'noop',
          PIPELINE_BRIDGE_MODULES: 'scripts/bench-bridges.ts',
        }),
      );
    }
    await until('the workers to register', async () => Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM workers WHERE state = 'running'`)).rows[0].n) === o.workers, 600_000, 50);
    const t0 = performance.now();
    await client.query(`UPDATE worker_control SET paused = false; NOTIFY bridge_work`);
    await Promise.race([until('the workers to finish', async () => (await completed(client)) >= o.intents, 30 * 60_000), exitOfAny(children, 'the workers')]);
    const perSec = o.intents / ((performance.now() - t0) / 1000);
    const pickupMs: number[] = [];
    if (o.pickups > 0) {
      process.env.DATABASE_URL ??= url;
      const { createIntent } = await import('../lib/intents/commands');
      const ids: string[] = [];
      for (let i = 0; i < o.pickups; i++) {
        ids.push((await createIntent({ payload: { order: `P-${i}` }, source: 'bench-pickup' }, { name: 'bench' })).id);
        // Idle workers each time: the previous one is claimed before the next is created.
        await until('a pickup', async () => (await client.query(`SELECT 1 FROM intent_work WHERE intent_id = $1 AND claimed_at IS NOT NULL`, [ids[i]])).rowCount === 1, 60_000, 2);
        await new Promise((r) => setTimeout(r, 5));
      }
      const { rows } = await client.query<{ ms: number }>(
        `SELECT (extract(epoch FROM w.claimed_at - i.created_at) * 1000)::float8 AS ms FROM intent_work w JOIN intents i ON i.id = w.intent_id WHERE i.id = ANY($1::uuid[])`,
        [ids],
      );
      pickupMs.push(...rows.map((r) => r.ms));
    }
    return { perSec, pickupMs };
  } finally {
    await stopAll(children);
    await client.query('UPDATE worker_control SET paused = false');
  }
}

/**
 * graphile-worker 0.17.3 over the same number of jobs (scripts/bench-graphile-worker.ts per process): the jobs are
 * added due in an hour, the processes start, and the clock starts when one statement makes them all due, followed
 * by the notification graphile-worker's own add_jobs sends. `noop` jobs do nothing; `pipeline` jobs each run one
 * intent through the pipeline with the no-op bridge, and every one of those runs must have succeeded.
 */
export async function graphileWorkerRun(url: string, client: pg.Client, o: Options & { task: 'noop' | 'pipeline' }): Promise<number> {
  const { runMigrations } = await import('graphile-worker');
  await runMigrations({ connectionString: url });
  await client.query('TRUNCATE graphile_worker._private_jobs CASCADE');
  if (o.task === 'pipeline') {
    await insertIntents(client, o.intents);
    await client.query(
      `SELECT graphile_worker.add_jobs(ARRAY(SELECT ROW('pipeline', json_build_object('id', id), NULL, now() + interval '1 hour', NULL, NULL, NULL, NULL)::graphile_worker.job_spec FROM intents))`,
    );
  } else {
    await client.query(
      `SELECT graphile_worker.add_jobs(ARRAY(SELECT ROW('noop', '{}'::json, NULL, now() + interval '1 hour', NULL, NULL, NULL, NULL)::graphile_worker.job_spec FROM generate_series(1, $1)))`,
      [o.intents],
    );
  }
  await client.query('ANALYZE graphile_worker._private_jobs');
  const children: ChildProcess[] = [];
  try {
    const ready: Promise<void>[] = [];
    for (let i = 0; i < o.workers; i++) {
      // Pipeline jobs use the project's own pools beside graphile-worker's, sized to the jobs in flight (a larger pool
      // did not change the figure).
      const child = spawnScript(
        'bench-graphile-worker.ts',
        { DATABASE_URL: url, GRAPHILE_TASK: o.task, GRAPHILE_POOL: String(GRAPHILE_POOL), DB_POOL_SIZE: String(o.concurrency), PIPELINE_LOCK_POOL_SIZE: String(o.concurrency) },
        'pipe',
      );
      children.push(child);
      ready.push(
        new Promise((resolve, reject) => {
          child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
          child.once('exit', (code) => reject(new Error(`a graphile-worker process exited (${code}) before it was ready`)));
        }),
      );
    }
    await Promise.all(ready);
    const t0 = performance.now();
    await client.query('UPDATE graphile_worker._private_jobs SET run_at = now()');
    await client.query(`SELECT pg_notify('jobs:insert', json_build_object('count', $1::int)::text)`, [o.intents]);
    await Promise.race([
      until('graphile-worker to finish', async () => Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM graphile_worker._private_jobs')).rows[0].n) === 0, 30 * 60_000),
      exitOfAny(children, 'graphile-worker'),
    ]);
    const perSec = o.intents / ((performance.now() - t0) / 1000);
    if (o.task === 'pipeline') {
      const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM pipeline_runs WHERE status = 'succeeded'`);
      if (Number(rows[0].n) !== o.intents) throw new Error(`graphile-worker's pipeline jobs ran ${rows[0].n} of ${o.intents} runs to success`);
    }
    return perSec;
  } finally {
    await stopAll(children);
  }
}

/** The engine's status update (RECEIVED → NORMALIZED) through its command, 100 in flight, in this process. */
async function statusUpdateRun(url: string, client: pg.Client, n: number): Promise<number> {
  await insertIntents(client, n);
  process.env.DATABASE_URL ??= url;
  const { updateIntentStatus } = await import('../lib/intents/commands');
  const ids = (await client.query<{ id: string }>('SELECT id::text AS id FROM intents')).rows.map((r) => r.id);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 100 }, async () => {
      while (next < ids.length) await updateIntentStatus({ id: ids[next++], status: 'NORMALIZED' }, { name: 'bench' });
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

/** graphile-worker's pool per process (its fastest setup: the jobs in flight and two more). */
const GRAPHILE_POOL = 12;

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
async function baselineRun(url: string, client: pg.Client, o: Options): Promise<number> {
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

export async function benchWorkers(
  url: string,
  say: (line: string) => void,
  o: { intents?: number; workers?: number; concurrency?: number; rounds?: number; pickups?: number } = {},
): Promise<WorkersBenchResult> {
  const opts: Options = { intents: o.intents ?? 10_000, workers: o.workers ?? 4, concurrency: o.concurrency ?? 10 };
  const rounds = o.rounds ?? 1;
  const client = new pg.Client({ connectionString: url, application_name: 'bridge:bench' });
  await client.connect();
  const runs = { baseline: [] as number[], graphile: [] as number[], graphilePipeline: [] as number[], noop: [] as number[], default: [] as number[], status: [] as number[] };
  const pickupMs: number[] = [];
  const shape = `${opts.workers} × ${opts.concurrency} over ${opts.intents}`;
  try {
    await warnOnConnections(client, opts, say);
    for (let round = 1; round <= rounds; round++) {
      const tag = rounds > 1 ? ` (round ${round} of ${rounds})` : '';
      say(`workers: bare claim + finish SQL, ${shape}${tag}…`);
      runs.baseline.push(await baselineRun(url, client, opts));
      say(`workers: graphile-worker 0.17.3, ${shape}${tag}…`);
      runs.graphile.push(await graphileWorkerRun(url, client, { ...opts, task: 'noop' }));
      say(`workers: graphile-worker 0.17.3 carrying the pipeline (one no-op bridge, a job per intent), ${shape}${tag}…`);
      runs.graphilePipeline.push(await graphileWorkerRun(url, client, { ...opts, task: 'pipeline' }));
      say(`workers: the workers, one no-op bridge, ${shape}${tag}, then pickup latency…`);
      const noop = await frameworkRun(url, client, { ...opts, bridges: 'noop', pickups: round === 1 ? (o.pickups ?? 200) : 0 });
      runs.noop.push(noop.perSec);
      pickupMs.push(...noop.pickupMs);
      say(`workers: the workers, default four bridges, ${shape}${tag}…`);
      runs.default.push((await frameworkRun(url, client, { ...opts, bridges: 'default', pickups: 0 })).perSec);
      say(`workers: the engine's status updates, 100 in flight${tag}…`);
      runs.status.push(await statusUpdateRun(url, client, 2_000));
    }
    await client.query('TRUNCATE intents CASCADE');
    await client.query('TRUNCATE workers, worker_stats');
    await client.query('TRUNCATE graphile_worker._private_jobs CASCADE');
    const r = { baseline: median(runs.baseline), graphile: median(runs.graphile), graphilePipeline: median(runs.graphilePipeline), noop: median(runs.noop), def: median(runs.default), status: median(runs.status) };
    return {
      ...opts,
      rounds,
      baselinePerSec: r.baseline,
      graphileWorkerPerSec: r.graphile,
      graphilePipelinePerSec: r.graphilePipeline,
      frameworkPerSec: r.noop,
      defaultBridgesPerSec: r.def,
      statusUpdatesPerSec: r.status,
      pickup: { n: pickupMs.length, p50Ms: percentile(pickupMs, 0.5), p95Ms: percentile(pickupMs, 0.95) },
      ratio: r.noop / r.graphile,
      baselineRatio: r.noop / r.baseline,
    };
  } finally {
    await client.end();
  }
}

export function formatWorkersBench(r: WorkersBenchResult): string[] {
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  return [
    `Workers: ${r.intents} items, ${r.workers} processes × ${r.concurrency} in flight${r.rounds > 1 ? `, median of ${r.rounds}` : ''}`,
    `  bare claim + finish SQL:                   ${n(r.baselinePerSec)} /s`,
    `  graphile-worker 0.17.3 (no-op job):        ${n(r.graphileWorkerPerSec)} /s`,
    `  graphile-worker carrying the pipeline:     ${n(r.graphilePipelinePerSec)} /s (the same run, step, audit and event per intent, one job each)`,
    `  the workers, one no-op bridge:             ${n(r.frameworkPerSec)} /s (${r.ratio.toFixed(2)} of graphile-worker, ${r.baselineRatio.toFixed(2)} of the bare SQL, ${(r.frameworkPerSec / r.graphilePipelinePerSec).toFixed(2)}× graphile-worker carrying the pipeline)`,
    `  the workers, default four bridges:         ${n(r.defaultBridgesPerSec)} intents/s (${n(r.defaultBridgesPerSec * 3)} status changes/s)`,
    `  the engine's status updates (100 in flight): ${n(r.statusUpdatesPerSec)} /s`,
    r.pickup.n > 0
      ? `  pickup, creation → claim, idle workers:    p50 ${r.pickup.p50Ms.toFixed(1)} ms, p95 ${r.pickup.p95Ms.toFixed(1)} ms (${r.pickup.n} intents)`
      : `  pickup, creation → claim, idle workers:    not measured (--pickups 0)`,
  ];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      intents: { type: 'string', default: '10000' },
      workers: { type: 'string', default: '4' },
      concurrency: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '1' },
      pickups: { type: 'string', default: '200' },
    },
  });
  const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);
  const { scriptDatabase } = await import('./replay-db');
  const { embedded, url } = await scriptDatabase(process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL, say);
  try {
    const result = await benchWorkers(url, say, {
      intents: Number(values.intents),
      workers: Number(values.workers),
      concurrency: Number(values.concurrency),
      rounds: Number(values.rounds),
      pickups: Number(values.pickups),
    });
    for (const line of formatWorkersBench(result)) console.log(line);
    return 0;
  } finally {
    // The engine's commands ran in this process: their counted outcomes go out before the database stops.
    const { flushOutcomes } = await import('../lib/intents/outcomes');
    const { disconnectDb } = await import('../lib/db/client');
    const { disconnectLockDb } = await import('../lib/pipeline/lock');
    await flushOutcomes().catch(() => undefined);
    // Every pool of this process closes before its database stops, so none reports its connections cut.
    await disconnectLockDb().catch(() => undefined);
    await disconnectDb().catch(() => undefined);
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
