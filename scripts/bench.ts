/**
 * `npm run bench [-- --rounds 3] [--json <file>] [--check] [--scenario <name> …] [--no-compare-strategies] [--no-api] [--only-api] [--no-leases] [--no-workers] [--lock-sampler]`
 *
 * The project's benchmark: every replay scenario at full size against a throw-away embedded PostgreSQL
 * it starts itself (or BENCH_DATABASE_URL / DATABASE_URL when given), with the raw-SQL baseline (plain pg, the
 * same status-update transaction, same pool size and concurrency) run side by side in alternating rounds. Prints
 * the figures with their targets (docs/REPLAY.md) and the throughput as a share of the baseline. `--check` exits 1 when a target
 * is missed (in the first run, which uses the configuration as it is, or in the two rows below). The run is recorded in replay_runs like any
 * other (door "bench"); so are the next ones, which measure 50 concurrent corrections under each correction
 * strategy that is not configured. Then two rows of their own (scripts/bench-extra.ts): the row locks 1,000 uncontended
 * corrections take, and status updates through the JSON API (the console's server, scripts/serve.ts, on the production build, built first when the build is stale;
 * BENCH_SKIP_BUILD=1 uses it as it is) against the naive five-step plain-pg transaction. `--lock-sampler` runs the lock
 * history's sampler in this process throughout, as a console instance would (docs/LOCK-HISTORY.md). `--only-api` runs
 * the JSON API row alone (with reads of one intent beside the status updates), for work on the server. Exit code: 0 when it ran,
 * 1 only with --check and a missed target, 2 when it could not run.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { benchWorkers, formatWorkersBench, type WorkersBenchResult } from './bench-workers';
import { LOCK_STRATEGIES } from '../lib/env';
import { countUncontendedRowLocks, measureApiDoor, type ApiRow, type UncontendedRow } from './bench-extra';
import { scriptDatabase } from './replay-db';
import type { ScenarioResult } from '../lib/replay/types';

const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const load = () => loadavg().map((v) => v.toFixed(2)).join(' ');

/**
 * How busy the machine's cores were over the next `ms` (0–100 %), from the kernel's CPU times. The load average
 * alone cannot say whether something else is running now: it trails work that ended minutes ago.
 */
async function cpuBusyPercent(ms: number): Promise<number> {
  const sample = () =>
    cpus().reduce(
      (sum, { times: t }) => ({ busy: sum.busy + t.user + t.nice + t.sys + t.irq, all: sum.all + t.user + t.nice + t.sys + t.irq + t.idle }),
      { busy: 0, all: 0 },
    );
  const before = sample();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = sample();
  return after.all > before.all ? (100 * (after.busy - before.busy)) / (after.all - before.all) : 0;
}

type Row = { measure: string; measured: string; target: string; pass: boolean | null };

function correctionsRow(corr: ScenarioResult, label: string): Row {
  const m = corr.measures;
  return {
    measure: label,
    measured: `${m.succeeded}/${m.calls} ok, p95 ${m.p95Ms} ms, version +${m.versionIncrement}, history ${Math.min(m.historyCount, m.auditCount)}`,
    target: `all ok, p95 ${corr.checks.find((c) => c.id === 'p95')?.target}, +${m.calls}`,
    pass: corr.verdict === 'pass',
  };
}

function section7(results: ScenarioResult[], strategies: Record<string, string>, compared: { results: ScenarioResult[]; strategy: string }[] = []): Row[] {
  const by = (name: string) => results.find((r) => r.name === name);
  const check = (name: string, id: string) => by(name)?.checks.find((c) => c.id === id);
  const rows: Row[] = [];
  const tp = by('throughput');
  if (tp) {
    const m = tp.measures;
    const c = check('throughput', 'throughput');
    const ratio = check('throughput', 'baseline-ratio');
    rows.push({ measure: 'concurrent status updates (1,000 intents, 100 at a time)', measured: `${Math.round(m.throughputPerSec)} /s (${tp.outcomes.succeeded}/${tp.outcomes.calls} ok)`, target: c?.target ?? '', pass: c ? c.pass && check('throughput', 'all-succeed')!.pass : null });
    rows.push({ measure: '  … as a share of the raw-SQL baseline', measured: `${Math.round(m.baselineRatio * 100)} % (${Math.round(m.throughputPerSec)} vs ${Math.round(m.baselinePerSec)} /s)`, target: ratio?.target ?? '', pass: ratio?.pass ?? null });
    rows.push({ measure: '  … client CPU per update (engine vs baseline)', measured: `${m.cpuMsPerUpdate} vs ${m.baselineCpuMsPerUpdate} ms`, target: '—', pass: null });
  }
  const lock = by('lock-latency');
  if (lock) {
    const c = check('lock-latency', 'p95');
    rows.push({ measure: 'lock acquisition p95, uncontended (take + release)', measured: `${c?.actual} (lock statement alone ${lock.measures.acquireP95Ms} ms)`, target: c?.target ?? '', pass: c?.pass ?? null });
  }
  const corr = by('corrections-50');
  if (corr) rows.push(correctionsRow(corr, `${corr.measures.calls} concurrent corrections of one intent (${strategies.reevaluate})`));
  for (const [k, c] of compared.entries()) {
    const other = c.results.find((r) => r.name === 'corrections-50');
    if (other) rows.push(correctionsRow(other, `  … the same with reevaluate ${c.strategy} (run ${k + 2})`));
  }
  const dl = by('crossing-deadlock');
  if (dl) {
    const c = check('crossing-deadlock', 'recovery');
    rows.push({ measure: 'deadlock detection and recovery, mean', measured: `${c?.actual} (${dl.measures.deadlocks} deadlocks in ${dl.measures.rounds} rounds, ${dl.measures.recoveredRounds} recovered)`, target: c?.target ?? '', pass: dl.verdict === 'pass' });
  }
  const id = by('identical-transitions');
  if (id) {
    const m = id.measures;
    rows.push({ measure: 'N identical concurrent transitions', measured: `${m.succeeded}/${m.calls} ok, ${m.intentsWithOneIncrement}/${m.intents} intents +1 exactly`, target: 'all ok, exactly one increment', pass: id.verdict === 'pass' });
  }
  const bulk = by('sorted-bulk');
  if (bulk) {
    const m = bulk.measures;
    rows.push({ measure: 'sorted bulk updates, 10 concurrent over 5 intents', measured: `${m.succeeded}/${m.calls} ok, ${m.deadlocks} deadlocks, ${m.lockTimeouts} lock timeouts`, target: 'no deadlock, no lock timeout', pass: bulk.verdict === 'pass' });
  }
  return rows;
}

/** The JSON API row's target: the whole door against the naive five-step transaction written with plain pg. */
const API_RATIO_TARGET = 0.4;
/** A read of one intent should cost a client no more than a command does. */
const READ_TO_COMMAND_TARGET = 1;

function extraRows(uncontended: UncontendedRow | null, api: ApiRow | null): Row[] {
  const rows: Row[] = [];
  if (uncontended) {
    rows.push({
      measure: `${uncontended.corrections} uncontended corrections (${uncontended.strategy}): row locks taken`,
      measured: `${uncontended.rowLocks} (${uncontended.succeeded}/${uncontended.corrections} ok, ${Math.round(uncontended.perSec)} /s)`,
      target: uncontended.strategy === 'pessimistic' ? '—' : '0',
      pass: uncontended.strategy === 'pessimistic' ? null : uncontended.rowLocks === 0 && uncontended.succeeded === uncontended.corrections,
    });
  }
  if (api) {
    rows.push({
      measure: "status updates through the JSON API (the console's server, token, 100 in flight)",
      measured: `${Math.round(api.apiPerSec)} /s vs ${Math.round(api.baselinePerSec)} /s naive plain-pg = ${api.ratio.toFixed(3)} (rounds ${api.rounds.join('; ')}; same server: GET /api/health ${Math.round(api.healthPerSec)} /s, unknown path ${Math.round(api.unknownPerSec)} /s)${api.apiFailed ? `, ${api.apiFailed} failed` : ''}`,
      target: `≥ ${API_RATIO_TARGET} × baseline`,
      pass: api.ratio >= API_RATIO_TARGET && api.apiFailed === 0,
    });
    rows.push({
      measure: 'reads of one intent through the same server (GET /api/intents/{id}), in each round beside the updates',
      measured: `${Math.round(api.readPerSec)} /s = ${api.readToCommand.toFixed(2)} × the status updates (median of rounds); server CPU per request: read ${api.serverCpuMs.read.toFixed(2)} ms, update ${api.serverCpuMs.update.toFixed(2)} ms`,
      target: `≥ ${READ_TO_COMMAND_TARGET} × status updates`,
      pass: api.readToCommand >= READ_TO_COMMAND_TARGET,
    });
  }
  return rows;
}

function table(rows: Row[]): string {
  const w = [Math.max(...rows.map((r) => r.measure.length)), Math.max(...rows.map((r) => r.measured.length)), Math.max(...rows.map((r) => r.target.length))];
  const line = (a: string, b: string, c: string, d: string) => `${a.padEnd(w[0])}  ${b.padEnd(w[1])}  ${c.padEnd(w[2])}  ${d}`;
  return [line('measure', 'measured', 'target (ours)', 'verdict'), line('-'.repeat(w[0]), '-'.repeat(w[1]), '-'.repeat(w[2]), '-------'), ...rows.map((r) => line(r.measure, r.measured, r.target, r.pass === null ? '' : r.pass ? 'pass' : 'MISS'))].join('\n');
}

function benchArgs() {
  const { values } = parseArgs({
    allowNegative: true,
    options: {
      rounds: { type: 'string', default: '3' },
      json: { type: 'string' },
      check: { type: 'boolean', default: false },
      scenario: { type: 'string', multiple: true },
      'compare-strategies': { type: 'boolean', default: true },
      workers: { type: 'boolean', default: true },
      api: { type: 'boolean', default: true },
      'only-api': { type: 'boolean', default: false },
      leases: { type: 'boolean', default: true },
      'lock-sampler': { type: 'boolean', default: false },
    },
  });
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 20) throw new Error('--rounds must be an integer from 1 to 20');
  return { values, rounds };
}

type ReplayRun = Awaited<ReturnType<typeof import('../lib/replay/runner').runReplay>>;
const strategyOf = (r: ReplayRun) => (r.config.settings as { strategies: Record<string, string> }).strategies.reevaluate;

/**
 * The 50-corrections target measured again under each correction strategy that is not configured, in runs of their
 * own, so the table shows all three and a release engineer sees what flipping LOCK_STRATEGY_REEVALUATE would do.
 */
async function compareStrategies(run: ReplayRun, configured: string, environment: 'development' | undefined): Promise<ReplayRun[]> {
  const { runReplay } = await import('../lib/replay/runner');
  const compared: ReplayRun[] = [];
  if (run.status !== 'finished' || !run.results.some((r) => r.name === 'corrections-50')) return compared;
  for (const strategy of LOCK_STRATEGIES.filter((s) => s !== configured)) {
    say(`run ${compared.length + 2}: corrections-50 again with reevaluate ${strategy} (--no-compare-strategies skips it)`);
    compared.push(await runReplay({ scenarios: ['corrections-50'], size: 'full', strategies: { reevaluate: strategy } }, 'bench', { name: `bench:${userInfo().username}` }, { environment }));
  }
  return compared;
}

/** The run's settings, the machine's load before it, the table of targets, and each replay run in full. */
async function printRuns(run: ReplayRun, compared: ReplayRun[], rows: Row[], before: { load: string; busy: number }, embedded: boolean): Promise<void> {
  const { formatRun, formatSettings } = await import('../lib/replay/report');
  console.log(`Bridge Console benchmark — ${run.finishedAt} — ${embedded ? 'throw-away embedded PostgreSQL' : 'given database'}`);
  for (const l of formatSettings(run)) console.log(l);
  console.log(
    `Before the run: ${before.busy.toFixed(0)} % of the CPU busy over 2 s (load average 1/5/15 min ${before.load}, which trails work already ended)` +
      (before.busy >= 10 ? ' — other work on the machine skews every figure below' : '; the bench then had the machine to itself, unless something started meanwhile'),
  );
  console.log('');
  console.log(table(rows));
  console.log('');
  console.log(formatRun(run));
  for (const [k, c] of compared.entries()) {
    console.log('');
    console.log(`Run ${k + 2}, a correction strategy not configured (reevaluate ${strategyOf(c)}):`);
    console.log(formatRun(c));
  }
}

async function main(): Promise<number> {
  const { values, rounds } = benchArgs();
  const { embedded, url } = await scriptDatabase(process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL, say);
  const { runReplay, startReplaySchema } = await import('../lib/replay/runner');
  const { parseInput } = await import('../lib/shared/validation');
  const { flushOutcomes } = await import('../lib/intents/outcomes');
  const { disconnectDb } = await import('../lib/db/client');
  const { LockSampler, samplerConfigFromEnv } = await import('../lib/locks/history/sampler');
  const sampler = values['lock-sampler'] ? new LockSampler(samplerConfigFromEnv(), url, say) : undefined;
  sampler?.start();
  if (sampler) say('the lock history sampler runs in this process');
  try {
    const loadBefore = load();
    const busyBefore = await cpuBusyPercent(2_000);
    if (values['only-api']) {
      // The JSON API row alone, for work on the server: no replay, no other rows.
      const api = await measureApiDoor(url, say, { rounds, requests: 2000, inFlight: 100, warmup: 1000, warmupBatches: 8 });
      console.log(`JSON API row — ${new Date().toISOString()} — before it ${busyBefore.toFixed(0)} % of the CPU busy over 2 s (load average ${loadBefore})`);
      console.log(table(extraRows(null, api)));
      if (values.json) writeFileSync(values.json, JSON.stringify({ api }, null, 2) + '\n');
      return values.check && extraRows(null, api).some((r) => r.pass === false) ? 1 : 0;
    }
    const scenarios = values.scenario?.flatMap((s) => s.split(',')).filter(Boolean);
    let last = '';
    const run = await runReplay(
      parseInput(startReplaySchema, { scenarios: scenarios?.length ? scenarios : 'all', size: 'full', sizes: { throughputRounds: rounds } }),
      'bench',
      { name: `bench:${userInfo().username}` },
      {
        environment: embedded ? 'development' : undefined,
        onProgress: (p) => {
          const line = `${p.done}/${p.total} ${p.current ?? ''} ${p.note}`;
          if (line !== last && (p.fraction === 0 || p.fraction === 1 || p.note.startsWith('round'))) say((last = line));
        },
      },
    );
    const strategies = (run.config.settings as { strategies: Record<string, string> }).strategies;
    const compared = values['compare-strategies'] ? await compareStrategies(run, strategies.reevaluate, embedded ? 'development' : undefined) : [];
    let uncontended: UncontendedRow | null = null;
    let api: ApiRow | null = null;
    if (run.status === 'finished' && !values.scenario?.length) {
      say('uncontended corrections: 1,000, each of its own intent, counting the row locks they take');
      uncontended = await countUncontendedRowLocks(1000);
      if (values.api) api = await measureApiDoor(url, say, { rounds, requests: 2000, inFlight: 100, warmup: 1000, warmupBatches: 8 });
    }
    const leaseRows = values.leases ? await (await import('./bench-leases')).benchLeases(say) : [];
    const rows = [...section7(run.results, strategies, compared.map((c) => ({ results: c.results, strategy: strategyOf(c) }))), ...extraRows(uncontended, api), ...leaseRows];
    await printRuns(run, compared, rows, { load: loadBefore, busy: busyBefore }, !!embedded);
    // The workers' row (scripts/bench-workers.ts): 4 worker processes over 10,000 intents beside the bare claim/finish SQL.
    let workers: WorkersBenchResult | null = null;
    if (values.workers) {
      workers = await benchWorkers(url, say);
      console.log('');
      for (const line of formatWorkersBench(workers)) console.log(line);
    }
    if (values.json) writeFileSync(values.json, JSON.stringify({ run, strategyComparison: compared, uncontended, api, workers }, null, 2) + '\n');
    if (run.status !== 'finished') return 2;
    const missed = run.verdict !== 'pass' || [...extraRows(uncontended, api), ...leaseRows].some((r) => r.pass === false);
    return values.check && missed ? 1 : 0;
  } finally {
    await sampler?.stop();
    await flushOutcomes().catch(() => undefined);
    await disconnectDb();
    await embedded?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error('[bench] failed:', err);
    process.exit(2);
  },
);
