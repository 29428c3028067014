/**
 * `npm run chaos -- --seconds N --instances 2 --clients K [--workers 2] [--pgbouncer]`
 *
 * Several console instances (`next start` on their own ports) and worker processes (`npm run worker`, each with an
 * outbox relay publishing to a throw-away NATS JetStream) on one PostgreSQL — optionally behind PgBouncer in
 * transaction mode — with K clients issuing random commands through every instance while faults are injected
 * (scripts/chaos/faults.ts). The run lasts N seconds and at least until every kind of fault has been injected once.
 * Afterwards every acknowledged success must be in the database, the outbox must drain into the stream, and the
 * invariant checker (lib/invariants) must find nothing; a live-feed probe measures how long a change committed
 * through one instance takes to reach an event stream on another, and a change it never sees fails the run.
 * Exit code 1 when any promise was broken.
 *
 * The database is a throw-away embedded PostgreSQL unless CHAOS_DATABASE_URL names one (it is written to: never
 * point it at data you care about). NATS needs Debian's nats-server (without it the run goes on without events and
 * says so). Logs of each instance, worker and of PgBouncer go to test-results/chaos/.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { freePort, startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';
import type { Instance } from './chaos/api';
import { ChaosClients, type Ack } from './chaos/clients';
import { standardFaults, type Fault } from './chaos/faults';
import { LiveProbe } from './chaos/live-probe';
import { pgbouncerBinary, startPgbouncer, type Bouncer } from './chaos/pgbouncer';
import { startWorker, type WorkerProcess } from './chaos/workers';
import { ensureBuild, root, startNext, type NextServer } from './next-server';
import { natsBinary, startTestNats, type TestNats } from '../test/nats';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    instances: { type: 'string', default: '2' },
    clients: { type: 'string', default: '8' },
    workers: { type: 'string', default: '2' },
    hot: { type: 'string', default: '24' },
    pgbouncer: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
    'fault-every': { type: 'string' },
  },
});

const seconds = Number(args.seconds);
const instanceCount = Number(args.instances);
const clientCount = Number(args.clients);
const workerCount = Number(args.workers);
const hot = Number(args.hot);
for (const [name, value, min] of [['seconds', seconds, 1], ['instances', instanceCount, 1], ['clients', clientCount, 1], ['workers', workerCount, 0], ['hot', hot, 2]] as const) {
  if (!Number.isInteger(value) || value < min) {
    console.error(`chaos: --${name} must be a whole number of at least ${min}`);
    process.exit(2);
  }
}
const faultEveryMs = args['fault-every'] ? Number(args['fault-every']) : Math.max(1_500, Math.min(10_000, (seconds * 1000) / 12));
const LOCK_TIMEOUT_MS = 1_000;
/** Short worker leases, so a killed worker's claims are rescued within the run. */
const WORKER_LEASE_MS = 3_000;
/** The run goes on past --seconds until every kind of fault had its turn, but not for ever. */
const FAULT_OVERTIME_MS = 180_000;
/** How long the relays get to publish the whole outbox once the clients and workers are done. */
const DRAIN_TIMEOUT_MS = 120_000;
const say = (line: string) => console.log(`[chaos] ${line}`);
const summaryDir = join(root, 'test-results', 'chaos');
/** One folder of logs per mode, emptied at the start: a log of an earlier run must not pass for this one's. */
const logDir = join(summaryDir, args.pgbouncer ? 'pgbouncer' : 'direct');

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Every acknowledged success must still be in the database: the change at the version it was acknowledged with. */
async function missingAcks(client: pg.Client, acks: Ack[]): Promise<string[]> {
  const status = acks.filter((a): a is Extract<Ack, { kind: 'status' }> => a.kind === 'status');
  const corrections = acks.filter((a): a is Extract<Ack, { kind: 'correction' }> => a.kind === 'correction');
  const created = acks.filter((a) => a.kind === 'created');
  const runs = acks.filter((a): a is Extract<Ack, { kind: 'pipeline' }> => a.kind === 'pipeline');
  const fenced = [...status, ...corrections].filter((a) => a.fencing);
  const missing: string[] = [];
  const s = await client.query<{ intent_id: string; version: number; status: string }>(
    `SELECT a.intent_id, a.version, a.status FROM unnest($1::uuid[], $2::int[], $3::text[]) AS a(intent_id, version, status)
     WHERE NOT EXISTS (SELECT 1 FROM audit_events e WHERE e.intent_id = a.intent_id AND e.version_after = a.version AND e.to_status::text = a.status)`,
    [status.map((a) => a.intentId), status.map((a) => a.version), status.map((a) => a.status)],
  );
  for (const r of s.rows) missing.push(`status ${r.status} at version ${r.version} of ${r.intent_id} was acknowledged but is not in the audit log`);
  const c = await client.query<{ intent_id: string; correction_id: string }>(
    `SELECT a.intent_id, a.correction_id FROM unnest($1::uuid[], $2::text[]) AS a(intent_id, correction_id)
     WHERE NOT EXISTS (SELECT 1 FROM corrections c WHERE c.intent_id = a.intent_id AND c.correction_id = a.correction_id)`,
    [corrections.map((a) => a.intentId), corrections.map((a) => a.correctionId)],
  );
  for (const r of c.rows) missing.push(`correction ${r.correction_id} of ${r.intent_id} was acknowledged but is not recorded`);
  const i = await client.query<{ id: string }>(
    `SELECT a.id FROM unnest($1::uuid[]) AS a(id) WHERE NOT EXISTS (SELECT 1 FROM intents i WHERE i.id = a.id)`,
    [created.map((a) => a.intentId)],
  );
  for (const r of i.rows) missing.push(`intent ${r.id} was created (201) but does not exist`);
  const p = await client.query<{ run_id: string; status: string; found: string | null }>(
    `SELECT a.run_id, a.status, r.status AS found FROM unnest($1::uuid[], $2::text[]) AS a(run_id, status)
     LEFT JOIN pipeline_runs r ON r.id = a.run_id WHERE r.status IS DISTINCT FROM a.status`,
    [runs.map((a) => a.runId), runs.map((a) => a.status)],
  );
  for (const r of p.rows) missing.push(`pipeline run ${r.run_id} was answered ${r.status} but is ${r.found ?? 'not recorded'}`);
  // A fenced write's audit event names the lease token it was accepted with.
  const f = await client.query<{ intent_id: string; version: number; token: string }>(
    `SELECT a.intent_id, a.version, a.token FROM unnest($1::uuid[], $2::int[], $3::text[], $4::bigint[]) AS a(intent_id, version, resource, token)
     WHERE NOT EXISTS (SELECT 1 FROM audit_events e WHERE e.intent_id = a.intent_id AND e.version_after = a.version
                         AND e.details->'fencing'->>'resource' = a.resource AND (e.details->'fencing'->>'token')::bigint = a.token)`,
    [fenced.map((a) => a.intentId), fenced.map((a) => a.version), fenced.map((a) => a.fencing!.resource), fenced.map((a) => a.fencing!.token)],
  );
  for (const r of f.rows) missing.push(`fenced write at version ${r.version} of ${r.intent_id} (token ${r.token}) was acknowledged but its audit event does not record that token`);
  return missing;
}

async function outboxBacklog(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_events WHERE published_at IS NULL');
  return rows[0].n;
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<number> {
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  if (args.pgbouncer && !pgbouncerBinary()) {
    say('SKIPPED: --pgbouncer was asked for but pgbouncer is not installed (Debian: apt-get install pgbouncer)');
    return process.env.CI ? 1 : 0;
  }

  let embedded: EmbeddedDb | null = null;
  let bouncer: Bouncer | null = null;
  let nats: TestNats | null = null;
  const servers: (NextServer | null)[] = [];
  const workers: (WorkerProcess | null)[] = [];
  try {
    let directUrl = process.env.CHAOS_DATABASE_URL;
    if (!directUrl) {
      embedded = await startEmbeddedPostgres({ persistent: false, database: 'bridge_chaos' });
      directUrl = embedded.url;
      say(`throw-away PostgreSQL on port ${embedded.port}`);
    }
    await migrate(directUrl);

    // One admin and one API token for every client, provisioned the way `npm start` does it.
    const token = `bc_${randomBytes(32).toString('base64url')}`;
    Object.assign(process.env, {
      DATABASE_URL: directUrl,
      CONSOLE_ADMIN_USER: 'chaos-admin',
      CONSOLE_ADMIN_PASSWORD: randomBytes(18).toString('base64url'),
      CONSOLE_BOOTSTRAP_TOKEN: token,
    });
    const { bootstrapAuth } = await import('../lib/auth/bootstrap');
    await bootstrapAuth();
    const { disconnectDb } = await import('../lib/db/client');
    await disconnectDb();

    if (args.pgbouncer) {
      bouncer = await startPgbouncer(directUrl, { poolSize: 20, logFile: join(logDir, 'pgbouncer.log') });
      say(`PgBouncer ${bouncer.port} in transaction mode in front of it: the instances' and workers' queries go through it; LISTEN and the relays' session locks do not`);
    }
    if (workerCount > 0 && natsBinary) {
      nats = await startTestNats();
      say(`throw-away NATS JetStream at ${nats.url}: the workers' outbox relays publish to it`);
    } else if (workerCount > 0) {
      // CI installs it (.ci/run): there, a run without the relays and the NATS fault would prove less than it says.
      if (process.env.CI) {
        say('FAILED: no nats-server on this machine (Debian: apt-get install nats-server); the relays and the NATS fault cannot run');
        return 1;
      }
      say('WARNING: no nats-server on this machine (Debian: apt-get install nats-server): the run goes on without relays, and the outbox is checked without the stream');
    }

    ensureBuild(say, args['skip-build']);
    // Settings every process of the run shares: the pooler (or not), the direct URL for LISTEN, short timeouts so
    // the faults show within a short run.
    const shared = {
      DATABASE_DIRECT_URL: directUrl,
      DB_PREPARED_STATEMENTS: bouncer ? 'false' : 'true',
      LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS),
      BRIDGE_ENV: 'development',
    };
    const ports = await Promise.all(Array.from({ length: instanceCount }, () => freePort()));
    const instances: Instance[] = ports.map((port, i) => ({ name: `instance ${String.fromCharCode(65 + i)}`, url: `http://127.0.0.1:${port}`, up: false }));
    const launches = instances.map(() => 0);
    const launch = async (i: number) => {
      launches[i]++;
      servers[i] = await startNext({
        port: ports[i],
        databaseUrl: bouncer?.url ?? directUrl,
        // One log per start: a restarted instance must not overwrite what its killed predecessor said.
        logFile: join(logDir, `instance-${String.fromCharCode(97 + i)}-${launches[i]}.log`),
        env: { ...shared, WORKERS: '0' },
      });
      instances[i].up = true;
    };
    await Promise.all(instances.map((_, i) => launch(i)));
    say(`${instanceCount} instances up: ${instances.map((i) => i.url).join(', ')}`);

    const clients = new ChaosClients(instances, token);
    await clients.seed(hot);
    const probe = instanceCount >= 2 ? new LiveProbe(instances[0], instances[1], token) : null;

    const watcher = new pg.Client({ connectionString: directUrl, application_name: 'bridge-chaos:watch' });
    watcher.on('error', () => undefined);
    await watcher.connect();
    const workerStarts = Array.from({ length: workerCount }, () => 0);
    const spawnWorker = async (i: number): Promise<WorkerProcess> => {
      workerStarts[i]++;
      const w = startWorker({
        name: `worker ${i + 1}`,
        logFile: join(logDir, `worker-${i + 1}-${workerStarts[i]}.log`),
        env: {
          ...shared,
          DATABASE_URL: bouncer?.url ?? directUrl,
          ...(nats ? { NATS_URL: nats.url, OUTBOX_POLL_MS: '250' } : {}),
          WORKER_CONCURRENCY: '3',
          WORKER_LEASE_MS: String(WORKER_LEASE_MS),
          WORKER_HEARTBEAT_MS: '500',
          WORKER_RESCUE_MS: '500',
          WORKER_RETRY_BASE_MS: '200',
          WORKER_RETRY_JITTER_MS: '100',
          WORKER_RETRY_MAX_MS: '2000',
        },
      });
      workers[i] = w;
      // Up once it has registered itself (the registry row carries its pid).
      const registered = await until(async () => {
        if (w.exited()) return true;
        const { rows } = await watcher.query('SELECT 1 FROM workers WHERE pid = $1 AND state = $2', [w.pid, 'running']);
        return rows.length > 0;
      }, 90_000);
      if (!registered || w.exited()) throw new Error(`${w.name} did not start (log: ${join(logDir, `worker-${i + 1}-${workerStarts[i]}.log`)})`);
      return w;
    };
    await Promise.all(Array.from({ length: workerCount }, (_, i) => spawnWorker(i)));
    if (workerCount) say(`${workerCount} workers up (pipeline ${nats ? 'and outbox relay ' : ''}in each)`);

    const faults: Fault[] = standardFaults({
      directUrl,
      instances,
      token,
      lockTimeoutMs: LOCK_TIMEOUT_MS,
      hotIds: () => clients.hotIds(),
      killInstance: (i) => {
        instances[i].up = false;
        probe?.outage(instances[i]);
        void servers[i]?.kill();
      },
      restartInstance: async (i) => {
        probe?.outage(instances[i]);
        await servers[i]?.kill();
        await launch(i);
      },
      ...(workerCount
        ? {
            workerCount,
            restartWorker: async (i: number) => {
              const victim = workers[i]!;
              // Killed while it holds claims (when it gets any within a few seconds), so a rescue has work to take over.
              const held = async () => {
                const { rows } = await watcher.query<{ n: number }>(`SELECT count(*)::int AS n FROM intent_work WHERE state = 'running' AND claimed_by LIKE $1`, [
                  `%:${victim.pid}:%`,
                ]);
                return rows[0].n;
              };
              await until(async () => (await held()) > 0, 3_000);
              const holding = await held();
              await victim.kill();
              return { killed: victim.pid, held: holding, started: (await spawnWorker(i)).pid };
            },
          }
        : {}),
      ...(nats ? { nats: { stop: () => nats!.stop(), start: () => nats!.start() } } : {}),
    });
    const injected: Record<string, string[]> = {};
    const allKinds = () => faults.every((f) => injected[f.kind]?.length);

    say(`${clientCount} clients for ${seconds} s on ${hot} hot intents; a fault every ${Math.round(faultEveryMs)} ms (${faults.length} kinds)`);
    const started = Date.now();
    const deadline = started + seconds * 1000;
    const listening = probe?.listen();
    const probing = probe?.probe(250);
    const running = clients.run(clientCount);
    for (let n = 0; Date.now() < deadline - faultEveryMs / 2 || (!allKinds() && Date.now() < deadline + FAULT_OVERTIME_MS); n++) {
      await new Promise((r) => setTimeout(r, faultEveryMs));
      const fault = faults[n % faults.length];
      try {
        const what = await fault.inject();
        if (what) (injected[fault.kind] ??= []).push(what);
      } catch (err) {
        (injected[`${fault.kind} (could not inject)`] ??= []).push(err instanceof Error ? err.message : String(err));
      }
    }
    await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())));
    clients.stop();
    probe?.stop();
    await running;
    await probing;
    probe?.close();
    await listening;
    const ranMs = Date.now() - started;

    // Whatever a last fault left down comes back, so every process ends gracefully and the relays can drain.
    await Promise.all(instances.map((inst, i) => (inst.up ? undefined : launch(i))));
    if (nats) await nats.start().catch(() => undefined);
    // The console instances stop before the outbox is drained: their housekeeping still writes events (a lease
    // sweep records every lease that ran out), and one written after the drain would never reach the stream.
    for (const server of servers) await server?.stop();
    instances.forEach((i) => (i.up = false));
    // The workers finish what they hold and claim nothing new; the relays in them publish what is left.
    const { setClaimingPaused } = await import('../lib/workers/control');
    if (workerCount) {
      await setClaimingPaused(true, { name: 'chaos' });
      const settled = await until(async () => {
        const { rows } = await watcher.query<{ n: number }>(`SELECT count(*)::int AS n FROM intent_work WHERE state = 'running'`);
        return rows[0].n === 0;
      }, WORKER_LEASE_MS * 10);
      if (!settled) say('WARNING: claims still running after the workers were paused (their leases will tell)');
    }
    let drained = true;
    if (nats) {
      drained = await until(async () => (await outboxBacklog(watcher)) === 0, DRAIN_TIMEOUT_MS);
      say(drained ? 'outbox drained into the stream' : `outbox NOT drained after ${DRAIN_TIMEOUT_MS} ms: ${await outboxBacklog(watcher)} event(s) left`);
    }
    for (const w of workers) await w?.stop();

    // What the workers did, from their records: runs by door and how they ended, claims rescued from killed workers.
    const { rows: runRows } = await watcher.query<{ door: string; status: string; n: number }>(
      'SELECT door, status, count(*)::int AS n FROM pipeline_runs GROUP BY 1, 2 ORDER BY 1, 2',
    );
    const { rows: rescueRows } = await watcher.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_events WHERE action = 'claim_rescued'`);
    const pipelineRuns = runRows.reduce<Record<string, Record<string, number>>>((acc, r) => ({ ...acc, [r.door]: { ...acc[r.door], [r.status]: r.n } }), {});
    const claimsRescued = rescueRows[0].n;

    // Judgement, from the database's own records (and the stream's).
    const missing = await missingAcks(watcher, clients.stats.acks);
    await watcher.end();
    const { createPool, createPrisma } = await import('../lib/db/client');
    const { checkInvariants, formatReport, allChecks } = await import('../lib/invariants/run');
    const pool = createPool(directUrl, 2);
    const prisma = createPrisma(pool, { preparedStatements: false });
    const invariants = await checkInvariants(prisma, { checks: allChecks({ natsUrl: nats?.url, outboxDrained: true }) });
    await prisma.$disconnect();
    await pool.end();

    const totalOps = Object.values(clients.stats.operations).reduce((n, byStatus) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
    const latencies = [...(probe?.latenciesMs ?? [])].sort((a, b) => a - b);
    const ranS = ranMs / 1000;
    say(`operations: ${totalOps} in ${ranS.toFixed(0)} s (${Math.round(totalOps / ranS)}/s), ${clients.stats.acks.length} acknowledged changes`);
    for (const [op, byStatus] of Object.entries(clients.stats.operations).sort()) {
      say(`  ${op.padEnd(18)} ${Object.entries(byStatus).sort().map(([s, n]) => `${s}×${n}`).join('  ')}`);
    }
    say('faults injected:');
    for (const [kind, list] of Object.entries(injected)) say(`  ${kind}: ${list.length} (e.g. ${list[0]})`);
    const notInjected = faults.filter((f) => !injected[f.kind]?.length).map((f) => f.kind);
    if (notInjected.length) say(`  never injected: ${notInjected.join(', ')}`);
    say(`pipeline runs: ${Object.entries(pipelineRuns).map(([door, byStatus]) => `${door} ${Object.entries(byStatus).map(([st, n]) => `${st}×${n}`).join(' ')}`).join('; ') || 'none'}; ${claimsRescued} claim(s) rescued from killed workers`);
    if (probe) {
      say(
        `live across instances (${instances[0].name} → ${instances[1].name}): ${latencies.length} changes seen, p50 ${percentile(latencies, 50).toFixed(0)} ms, ` +
          `p95 ${percentile(latencies, 95).toFixed(0)} ms, max ${(latencies.at(-1) ?? NaN).toFixed(0)} ms; ${probe.deliveredAfterOutage} more delivered after an instance restart; ${probe.missed} missed`,
      );
    }
    for (const line of formatReport(invariants)) say(line);
    const problems = [
      ...clients.stats.problems,
      ...missing,
      ...(probe?.misses ?? []).map((m) => `live feed: ${m}`),
      ...(drained ? [] : ['the outbox did not drain into the stream']),
      ...notInjected.map((k) => `fault never injected: ${k}`),
    ];
    for (const p of problems.slice(0, 30)) say(`PROBLEM: ${p}`);
    const violations = invariants.violationCount + problems.length;

    const summary = {
      date: new Date().toISOString(),
      seconds,
      ranSeconds: Math.round(ranS),
      instances: instanceCount,
      workers: workerCount,
      clients: clientCount,
      pgbouncer: !!bouncer,
      nats: !!nats,
      operations: clients.stats.operations,
      totalOperations: totalOps,
      acknowledged: clients.stats.acks.length,
      pipelineRuns,
      claimsRescued,
      faults: Object.fromEntries(Object.entries(injected).map(([k, v]) => [k, v.length])),
      live: {
        samples: latencies.length,
        p50Ms: percentile(latencies, 50),
        p95Ms: percentile(latencies, 95),
        maxMs: latencies.at(-1) ?? null,
        deliveredAfterOutage: probe?.deliveredAfterOutage ?? 0,
        missed: probe?.missed ?? 0,
      },
      invariants,
      problems,
      violations,
    };
    writeFileSync(join(summaryDir, `summary${bouncer ? '-pgbouncer' : ''}.json`), JSON.stringify(summary, null, 2));
    say(violations ? `${violations} violation(s): see above` : 'zero violations');
    return violations ? 1 : 0;
  } finally {
    for (const w of workers) await w?.kill().catch(() => undefined);
    for (const server of servers) await server?.stop().catch(() => undefined);
    await nats?.dispose().catch(() => undefined);
    await bouncer?.stop().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('[chaos] the run could not complete:', err);
    process.exit(2);
  },
);
