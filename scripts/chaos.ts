/**
 * `npm run chaos -- --seconds N --instances 2 --clients K [--pgbouncer]`
 *
 * Several console instances (`next start` on their own ports) on one PostgreSQL — optionally behind PgBouncer in
 * transaction mode — with K clients issuing random commands through all of them while faults are injected
 * (scripts/chaos/faults.ts). Afterwards every acknowledged success must be in the database and the invariant
 * checker (lib/invariants) must find nothing; a live-feed probe measures how long a change committed through one
 * instance takes to reach an event stream on another. Exit code 1 when any promise was broken.
 *
 * The database is a throw-away embedded PostgreSQL unless CHAOS_DATABASE_URL names one (it is written to: never
 * point it at data you care about). Logs of each instance and of PgBouncer go to test-results/chaos/.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
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
import { ensureBuild, root, startNext, type NextServer } from './next-server';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    instances: { type: 'string', default: '2' },
    clients: { type: 'string', default: '8' },
    hot: { type: 'string', default: '24' },
    pgbouncer: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
    'fault-every': { type: 'string' },
  },
});

const seconds = Number(args.seconds);
const instanceCount = Number(args.instances);
const clientCount = Number(args.clients);
const hot = Number(args.hot);
for (const [name, value, min] of [['seconds', seconds, 1], ['instances', instanceCount, 1], ['clients', clientCount, 1], ['hot', hot, 2]] as const) {
  if (!Number.isInteger(value) || value < min) {
    console.error(`chaos: --${name} must be a whole number of at least ${min}`);
    process.exit(2);
  }
}
const faultEveryMs = args['fault-every'] ? Number(args['fault-every']) : Math.max(1_500, Math.min(10_000, (seconds * 1000) / 12));
const LOCK_TIMEOUT_MS = 1_000;
const say = (line: string) => console.log(`[chaos] ${line}`);
const logDir = join(root, 'test-results', 'chaos');

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Every acknowledged success must still be in the database: the change at the version it was acknowledged with. */
async function missingAcks(client: pg.Client, acks: Ack[]): Promise<string[]> {
  const status = acks.filter((a): a is Extract<Ack, { kind: 'status' }> => a.kind === 'status');
  const corrections = acks.filter((a): a is Extract<Ack, { kind: 'correction' }> => a.kind === 'correction');
  const created = acks.filter((a) => a.kind === 'created');
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
  return missing;
}

async function main(): Promise<number> {
  mkdirSync(logDir, { recursive: true });
  if (args.pgbouncer && !pgbouncerBinary()) {
    say('SKIPPED: --pgbouncer was asked for but pgbouncer is not installed (Debian: apt-get install pgbouncer)');
    return process.env.CI ? 1 : 0;
  }

  let embedded: EmbeddedDb | null = null;
  let bouncer: Bouncer | null = null;
  const servers: (NextServer | null)[] = [];
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
      say(`PgBouncer ${bouncer.port} in transaction mode in front of it: the instances' queries go through it, LISTEN does not`);
    }

    ensureBuild(say, args['skip-build']);
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
        env: {
          DATABASE_DIRECT_URL: directUrl,
          DB_PREPARED_STATEMENTS: bouncer ? 'false' : 'true',
          LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS),
          BRIDGE_ENV: 'development',
          WORKERS: '0',
        },
      });
      instances[i].up = true;
    };
    await Promise.all(instances.map((_, i) => launch(i)));
    say(`${instanceCount} instances up: ${instances.map((i) => i.url).join(', ')}`);

    const clients = new ChaosClients(instances, token);
    await clients.seed(hot);
    const probeIntent = await fetch(`${instances[0].url}/api/intents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ payload: { probe: true }, source: 'chaos-probe' }),
    }).then((r) => r.json() as Promise<{ id: string }>);

    const faults: Fault[] = standardFaults({
      directUrl,
      instances,
      token,
      lockTimeoutMs: LOCK_TIMEOUT_MS,
      hotIds: () => clients.hotIds(),
      killInstance: (i) => {
        instances[i].up = false;
        void servers[i]?.kill();
      },
      restartInstance: async (i) => {
        await servers[i]?.kill();
        await launch(i);
      },
    });
    const injected: Record<string, string[]> = {};

    say(`${clientCount} clients for ${seconds} s on ${hot} hot intents; a fault every ${Math.round(faultEveryMs)} ms`);
    const deadline = Date.now() + seconds * 1000;
    const probe = instanceCount >= 2 ? new LiveProbe(instances[0], instances[1], token) : null;
    const listening = probe?.listen();
    const probing = probe?.probe(probeIntent.id, 250);
    let faultsStopped = false;
    const faulting = (async () => {
      for (let n = 0; !faultsStopped && Date.now() < deadline - faultEveryMs / 2; n++) {
        await new Promise((r) => setTimeout(r, faultEveryMs));
        if (faultsStopped) break;
        const fault = faults[n % faults.length];
        try {
          const what = await fault.inject();
          if (what) (injected[fault.kind] ??= []).push(what);
        } catch (err) {
          (injected[`${fault.kind} (could not inject)`] ??= []).push(err instanceof Error ? err.message : String(err));
        }
      }
    })();
    await clients.run(clientCount, deadline);
    faultsStopped = true;
    await faulting;
    probe?.stop();
    await Promise.all([listening, probing]);
    // Any instance still down from the last fault comes back, so every instance shuts down gracefully.
    await Promise.all(instances.map((inst, i) => (inst.up ? undefined : launch(i))));
    for (const server of servers) await server?.stop();
    instances.forEach((i) => (i.up = false));

    // Judgement, from the database's own records.
    const checker = new pg.Client({ connectionString: directUrl, application_name: 'bridge-chaos:check' });
    await checker.connect();
    const missing = await missingAcks(checker, clients.stats.acks);
    await checker.end();
    const { createPool, createPrisma } = await import('../lib/db/client');
    const { checkInvariants, formatReport } = await import('../lib/invariants/run');
    const pool = createPool(directUrl, 2);
    const prisma = createPrisma(pool, { preparedStatements: false });
    const invariants = await checkInvariants(prisma);
    await prisma.$disconnect();
    await pool.end();

    const totalOps = Object.values(clients.stats.operations).reduce((n, byStatus) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
    const latencies = [...(probe?.latenciesMs ?? [])].sort((a, b) => a - b);
    say(`operations: ${totalOps} in ${seconds} s (${Math.round(totalOps / seconds)}/s), ${clients.stats.acks.length} acknowledged changes`);
    for (const [op, byStatus] of Object.entries(clients.stats.operations).sort()) {
      say(`  ${op.padEnd(18)} ${Object.entries(byStatus).sort().map(([s, n]) => `${s}×${n}`).join('  ')}`);
    }
    say('faults injected:');
    for (const [kind, list] of Object.entries(injected)) say(`  ${kind}: ${list.length} (e.g. ${list[0]})`);
    if (probe) {
      say(`live across instances (${instances[0].name} → ${instances[1].name}): ${latencies.length} changes seen, p50 ${percentile(latencies, 50).toFixed(0)} ms, p95 ${percentile(latencies, 95).toFixed(0)} ms, max ${(latencies.at(-1) ?? NaN).toFixed(0)} ms, ${probe.missed} missed`);
    }
    for (const line of formatReport(invariants)) say(line);
    // A probe change not seen on the other instance within 5 s is reported, not counted as a broken promise yet: runs
    // with an instance restart show about one such miss, still being diagnosed (docs/DEPLOY.md, Proving it).
    if (probe?.missed) say(`WARNING: ${probe.missed} probe change(s) were not seen on the other instance's event stream within 5 s`);
    const problems = [...clients.stats.problems, ...missing];
    for (const p of problems.slice(0, 30)) say(`PROBLEM: ${p}`);
    const violations = invariants.violationCount + problems.length;

    const summary = {
      seconds,
      instances: instanceCount,
      clients: clientCount,
      pgbouncer: !!bouncer,
      operations: clients.stats.operations,
      totalOperations: totalOps,
      acknowledged: clients.stats.acks.length,
      faults: Object.fromEntries(Object.entries(injected).map(([k, v]) => [k, v.length])),
      live: { samples: latencies.length, p50Ms: percentile(latencies, 50), p95Ms: percentile(latencies, 95), maxMs: latencies.at(-1) ?? null, missed: probe?.missed ?? 0 },
      invariants,
      problems,
      violations,
    };
    writeFileSync(join(logDir, `summary${bouncer ? '-pgbouncer' : ''}.json`), JSON.stringify(summary, null, 2));
    say(violations ? `${violations} violation(s): see above` : 'zero violations');
    return violations ? 1 : 0;
  } finally {
    for (const server of servers) await server?.stop().catch(() => undefined);
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
