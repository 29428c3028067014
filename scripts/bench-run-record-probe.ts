/**
 * A design probe for the workers (docs/WORKERS.md, "Benchmark"): how fast the database side of a worker's run would be
 * if the run were written once, at its close, instead of opened by the claim and closed later. Side by side in one
 * run, on one database, over the same items: graphile-worker 0.17.3's no-op jobs (as `npm run bench:workers` runs
 * them), and claim + close loops (4 connections, batches of 10) where the claim is the workers' own
 * (claimDueIntents: the execution lock tried, the fence granted, terminal intents settled) and the close is one
 * statement that ends the claims (conditional on their tokens) and writes, per claim:
 * - `final`: the run and its step as finished rows of today's pipeline_runs and pipeline_steps, and one audit event
 *   (`pipeline_finished` with the steps, whose trigger puts the event for other services in the outbox);
 * - `one-row`: the run with its steps as one row of a table of its own, and the same audit event.
 * It measures the records, not the worker processes: the loops run no bridge code, in this one process.
 * `npx tsx scripts/bench-run-record-probe.ts [--intents N] [--rounds N]`; BENCH_DATABASE_URL or DATABASE_URL to use a
 * database of your own (the probe creates and drops its one table there), else a throw-away embedded PostgreSQL.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Prisma } from '@/generated/prisma/client';
import { heldClaims } from '@/lib/pipeline/repository';
import { graphileWorkerRun, insertIntents, median } from './bench-workers';

type Variant = 'final' | 'one-row';
const LOOPS = 4;
const BATCH = 10;

function closeStatement(variant: Variant, items: { intentId: string; claimToken: string }[]): Prisma.Sql {
  const record =
    variant === 'final'
      ? Prisma.sql`runs AS (
          INSERT INTO pipeline_runs (intent_id, round, mode, status, door, actor, claim_token, started_at, finished_at)
          SELECT intent_id, round, 'FAILFAST', 'succeeded', 'worker', 'worker:probe', claim_token, claimed_at, now() FROM done
          RETURNING id, intent_id, round, claim_token, started_at
        ), steps AS (
          INSERT INTO pipeline_steps (run_id, intent_id, round, position, bridge, status, claim_token, started_at, finished_at, result)
          SELECT id, intent_id, round, 0, 'noop', 'completed', claim_token, started_at, now(), '{}'::jsonb FROM runs
        )`
      : Prisma.sql`runs AS (
          INSERT INTO bench_probe_runs (intent_id, round, status, claim_token, started_at, finished_at, steps)
          SELECT intent_id, round, 'succeeded', claim_token, claimed_at, now(), '[{"bridge":"noop","status":"completed","result":{}}]'::jsonb FROM done
          RETURNING id, intent_id
        )`;
  return Prisma.sql`
    WITH input AS (SELECT * FROM unnest(${items.map((i) => i.intentId)}::uuid[], ${items.map((i) => i.claimToken)}::bigint[]) AS t(intent_id, claim_token)),
    ${heldClaims('UPDATE')}, done AS (
      UPDATE intent_work w SET state = 'completed', finished_at = now(), lease_until = NULL FROM held h WHERE w.intent_id = h.intent_id
      RETURNING w.intent_id, w.round, w.claim_token, w.claimed_at
    ), ${record},
    audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT intent_id, 'pipeline_finished', 'worker:probe',
             jsonb_build_object('runId', id::text, 'status', 'succeeded', 'steps', jsonb_build_array(jsonb_build_object('bridge', 'noop', 'status', 'completed')))
      FROM runs
    )
    SELECT count(*)::int AS n FROM done`;
}

async function probeRun(client: pg.Client, variant: Variant, intents: number): Promise<number> {
  const { queryOnPool } = await import('../lib/db/client');
  const { claimDueIntents } = await import('../lib/workers/repository');
  await insertIntents(client, intents);
  const t0 = performance.now();
  let closed = 0;
  await Promise.all(
    Array.from({ length: LOOPS }, async (_, loop) => {
      for (;;) {
        const claims = await claimDueIntents(queryOnPool, { workerName: `probe-${loop}`, limit: BATCH, leaseMs: 30_000, maxAttempts: 5 });
        if (claims.length === 0) return;
        const [row] = await queryOnPool<{ n: number }>(closeStatement(variant, claims));
        closed += row.n;
      }
    }),
  );
  const perSec = intents / ((performance.now() - t0) / 1000);
  if (closed !== intents) throw new Error(`the ${variant} probe closed ${closed} of ${intents} claims`);
  return perSec;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { intents: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '3' } } });
  const intents = Number(values.intents);
  const rounds = Number(values.rounds);
  const say = (line: string) => process.stderr.write(`[probe] ${line}\n`);
  const { scriptDatabase } = await import('./replay-db');
  const { embedded, url } = await scriptDatabase(process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL, say);
  const client = new pg.Client({ connectionString: url, application_name: 'bridge:bench-probe' });
  await client.connect();
  const runs = { graphile: [] as number[], final: [] as number[], oneRow: [] as number[] };
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS bench_probe_runs (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), intent_id uuid NOT NULL, round int NOT NULL,
      status text NOT NULL, claim_token bigint, started_at timestamptz NOT NULL, finished_at timestamptz NOT NULL, steps jsonb NOT NULL)`);
    await client.query('CREATE INDEX IF NOT EXISTS bench_probe_runs_intent_idx ON bench_probe_runs (intent_id, started_at)');
    for (let round = 1; round <= rounds; round++) {
      say(`round ${round} of ${rounds}: graphile-worker's no-op jobs, then the two probes, ${intents} items each…`);
      runs.graphile.push(await graphileWorkerRun(url, client, { intents, workers: LOOPS, concurrency: BATCH, task: 'noop' }));
      runs.final.push(await probeRun(client, 'final', intents));
      runs.oneRow.push(await probeRun(client, 'one-row', intents));
    }
    const g = median(runs.graphile);
    const n = (x: number) => Math.round(x).toLocaleString('en-US');
    console.log(`Run records written once at the close: ${intents} items, ${LOOPS} × ${BATCH}, median of ${rounds}`);
    console.log(`  graphile-worker 0.17.3 (no-op job):                       ${n(g)} /s`);
    console.log(`  claim + close writing finished run and step rows:         ${n(median(runs.final))} /s (${(median(runs.final) / g).toFixed(2)} of graphile-worker)`);
    console.log(`  claim + close writing the run with its steps as one row:  ${n(median(runs.oneRow))} /s (${(median(runs.oneRow) / g).toFixed(2)} of graphile-worker)`);
    return 0;
  } finally {
    await client.query('DROP TABLE IF EXISTS bench_probe_runs').catch(() => undefined);
    await client.query('TRUNCATE intents CASCADE').catch(() => undefined);
    await client.end();
    const { disconnectDb } = await import('../lib/db/client');
    await disconnectDb().catch(() => undefined);
    await embedded?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error('[probe] failed:', err);
    process.exit(2);
  },
);
