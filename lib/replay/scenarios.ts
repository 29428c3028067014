import { bulkUpdateStatus, createIntent, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import type { LockStrategy } from '@/lib/env';
import { observeOutcomes } from '@/lib/intents/outcomes';
import type { JsonObject } from '@/lib/shared/json';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { Actor, Intent } from '@/lib/shared/intent-types';
import { createBaselinePool, rawUpdateStatusInOneStatement } from './baseline';
import { ReplayCancelledError } from './errors';
import { intentStates } from './queries';
import { median, round, summarize } from './stats';
import { OutcomeTally } from './tally';
import type { Targets } from './targets';
import { crossingOrderTransaction, executePipelineStandIn, lockAndRelease } from './transactions';
import type { ScenarioName, ScenarioResult, Sizes, StrategyFlag } from './types';

import { checksFor, verdictOf } from './verdict';

const STRATEGY_NOTES: Record<LockStrategy, string> = {
  optimistic: ' (version-checked tries with backoff, then a locked attempt)',
  pessimistic: ' (every correction takes the row lock; those that meet in one process go together)',
  adaptive: ' (version-checked while uncontended; once contended, corrections take the row lock at once, and those that meet in one process go together)',
};

/**
 * The scenario engine: the documented concurrency scenarios (docs/REPLAY.md), run against the real engine on
 * intents each scenario creates (tagged as replay data, so operators never see them unless they ask). One module,
 * three doors: the Replay page's background runs, `npm run replay`, and `npm run bench`.
 */

export type ScenarioContext = {
  runId: string;
  actor: Actor;
  sizes: Sizes;
  targets: Targets;
  /** The console's database, for the raw-SQL baseline's own pool. */
  databaseUrl: string;
  /** The engine's pool size: the baseline gets the same. */
  poolSize: number;
  lockTimeoutMs: number;
  /** Whether the engine names its statements (server-side prepared); the baseline does the same. */
  preparedStatements: boolean;
  /** The lock strategies the measured calls use: the configured ones, or the run's own choice (RunConfig.strategyOverrides). */
  strategies: Record<StrategyFlag, LockStrategy>;
  /** 0..1 within the scenario, with a short note; the runner persists it (throttled). */
  progress: (fraction: number, note: string) => void;
  /** Throws ReplayCancelledError when someone asked to cancel the run; called between steps. */
  checkCancelled: () => Promise<void>;
};

type Measured = { measures: Record<string, number>; notes?: string[]; latencies?: number[] };

type Scenario = {
  name: ScenarioName;
  title: string;
  source: string;
  description: string;
  run: (ctx: ScenarioContext, tally: OutcomeTally) => Promise<Measured>;
};

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    range(Math.min(limit, items.length)).map(async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i], i);
      }
    }),
  );
  return results;
}

const PATH_TO: Record<IntentStatus, IntentStatus[]> = {
  RECEIVED: [],
  NORMALIZED: ['NORMALIZED'],
  PROCESSED: ['NORMALIZED', 'PROCESSED'],
  CORRECTED: ['NORMALIZED', 'PROCESSED', 'CORRECTED'],
  COMPLETED: ['NORMALIZED', 'PROCESSED', 'COMPLETED'],
  FAILED: ['FAILED'],
};

/** The measured calls: the engine's commands by the strategies the run uses (configured, or its own choice). */
const updateAsRun = (ctx: ScenarioContext, id: string, status: IntentStatus) => updateIntentStatus({ id, status }, ctx.actor, { strategy: ctx.strategies.update_status });
const correctAsRun = (ctx: ScenarioContext, id: string, diff: JsonObject, reason: string) =>
  reevaluateIntent({ id, diff, source: 'replay', reason }, ctx.actor, { strategy: ctx.strategies.reevaluate });

/** Setup work is not what a scenario measures: its outcomes go to no one (they are still persisted as usual). */
const unobserved = <T>(work: () => Promise<T>) => observeOutcomes(() => undefined, work);

/** Creates replay intents through the engine (createIntent with isReplay) and walks them to `status`. */
async function createReplayIntents(ctx: ScenarioContext, scenario: ScenarioName, count: number, status: IntentStatus): Promise<Intent[]> {
  return unobserved(() =>
    mapLimit(range(count), ctx.poolSize, async (n) => {
      let intent = await createIntent({ payload: { replay: { run: ctx.runId, scenario, n } }, source: 'replay' }, ctx.actor, { isReplay: true });
      for (const step of PATH_TO[status]) intent = (await updateIntentStatus({ id: intent.id, status: step }, ctx.actor)).intent;
      return intent;
    }),
  );
}

const statusRace: Scenario = {
  name: 'status-race',
  title: 'Concurrent status updates on one intent',
  source: 'concurrent status updates under row locks',
  description: 'Two different status updates race on each intent (RECEIVED → NORMALIZED and → PROCESSED): at least one wins, and status, version and history agree with the ones that succeeded.',
  async run(ctx, tally) {
    const intents = await createReplayIntents(ctx, this.name, ctx.sizes.statusRaceIntents, 'RECEIVED');
    const applied = new Map<string, IntentStatus[]>();
    for (const [i, intent] of intents.entries()) {
      await ctx.checkCancelled();
      const calls = await Promise.all(
        (['NORMALIZED', 'PROCESSED'] as const).map((status) =>
          tally.call(() => updateAsRun(ctx, intent.id, status), (r) => r.alreadyApplied).then((r) => ({ status, r })),
        ),
      );
      applied.set(intent.id, calls.filter(({ r }) => r.ok && !r.value.alreadyApplied).map(({ status }) => status));
      ctx.progress((i + 1) / intents.length, `${i + 1} of ${intents.length} races`);
    }
    const states = await intentStates(intents.map((i) => i.id));
    let intentsWithSuccess = 0;
    let consistentIntents = 0;
    for (const intent of intents) {
      const wins = applied.get(intent.id) ?? [];
      const state = states.get(intent.id);
      if (wins.length > 0) intentsWithSuccess++;
      const expectedStatus = wins.includes('PROCESSED') ? 'PROCESSED' : wins.includes('NORMALIZED') ? 'NORMALIZED' : 'RECEIVED';
      if (state && state.status === expectedStatus && state.version === intent.version + wins.length && state.statusChanges === wins.length) consistentIntents++;
    }
    return { measures: { intents: intents.length, intentsWithSuccess, consistentIntents } };
  },
};

function corrections(name: 'corrections-3' | 'corrections-50', count: (s: Sizes) => number, source: string): Scenario {
  return {
    name,
    title: `${name === 'corrections-3' ? 'Three' : 'Many'} concurrent corrections of one intent`,
    source,
    description:
      'Concurrent corrections (re-evaluations) of one PROCESSED intent, each with its own diff, by the correction strategy in force (adaptive, the default: version-checked while the intent is uncontended, the row lock at once when it is; optimistic: version-checked tries with backoff, then a locked attempt; pessimistic: each takes the row lock; under the locking ones, corrections that meet in one process go to the database together): all succeed, every one is in the history, and the version went up by one per correction.',
    async run(ctx, tally) {
      const n = count(ctx.sizes);
      const [intent, ...spares] = await createReplayIntents(ctx, name, 1 + ctx.poolSize, 'PROCESSED');
      // Warm-up, not measured: one correction per pooled connection, by the strategy under test and by the locked
      // path (the fallback). A running console's connections have done this long ago; a fresh one pays Postgres'
      // one-time costs on first use (compiling the correction function, planning its statements: a few milliseconds each).
      await unobserved(() =>
        Promise.all(
          spares.map((spare, k) =>
            correctAsRun(ctx, spare.id, { warmUp: k }, 'warm-up').then(() =>
              reevaluateIntent({ id: spare.id, diff: { warmUp: -k }, source: 'replay', reason: 'warm-up' }, ctx.actor, { strategy: 'pessimistic' }),
            ),
          ),
        ),
      );
      await ctx.checkCancelled();
      let done = 0;
      const results = await Promise.all(
        range(n).map((i) =>
          tally
            .call(
              () => correctAsRun(ctx, intent.id, { [`field_${i}`]: `value_${i}` }, `replay correction ${i + 1} of ${n}`),
              (r) => r.alreadyApplied,
            )
            .finally(() => ctx.progress(++done / n, `${done} of ${n} corrections`)),
        ),
      );
      const state = (await intentStates([intent.id])).get(intent.id);
      const fieldsPresent = state ? range(n).filter((i) => state.payload[`field_${i}`] === `value_${i}`).length : 0;
      const maxRetries = Math.max(0, ...results.map((r) => (r.ok ? r.value.retries : 0)));
      return {
        measures: {
          calls: n,
          succeeded: results.filter((r) => r.ok).length,
          versionIncrement: state ? state.version - intent.version : 0,
          historyCount: Math.min(state?.corrections ?? 0, fieldsPresent),
          auditCount: state?.correctionEvents ?? 0,
          maxRetries,
        },
        notes: [
          `strategy ${ctx.strategies.reevaluate}${STRATEGY_NOTES[ctx.strategies.reevaluate]}; final status ${state?.status}, version ${state?.version}; the most retries any correction needed: ${maxRetries}`,
        ],
      };
    },
  };
}

const identicalTransitions: Scenario = {
  name: 'identical-transitions',
  title: 'Identical concurrent transitions',
  source: 'already-applied detection',
  description:
    'Many identical requests (RECEIVED → NORMALIZED) race on each intent: all succeed, exactly one increments the version, the others are answered "already applied" instead of an invalid transition.',
  async run(ctx, tally) {
    const intents = await createReplayIntents(ctx, this.name, ctx.sizes.identicalIntents, 'RECEIVED');
    let succeeded = 0;
    let alreadyApplied = 0;
    for (const [i, intent] of intents.entries()) {
      await ctx.checkCancelled();
      const results = await Promise.all(
        range(ctx.sizes.identicalCalls).map(() =>
          tally.call(() => updateAsRun(ctx, intent.id, 'NORMALIZED'), (r) => r.alreadyApplied),
        ),
      );
      succeeded += results.filter((r) => r.ok).length;
      alreadyApplied += results.filter((r) => r.ok && r.value.alreadyApplied).length;
      ctx.progress((i + 1) / intents.length, `${i + 1} of ${intents.length} intents`);
    }
    const states = await intentStates(intents.map((i) => i.id));
    const intentsWithOneIncrement = intents.filter((intent) => {
      const s = states.get(intent.id);
      return s && s.status === 'NORMALIZED' && s.version === intent.version + 1 && s.statusChanges === 1;
    }).length;
    return {
      measures: { intents: intents.length, calls: intents.length * ctx.sizes.identicalCalls, succeeded, alreadyApplied, intentsWithOneIncrement },
    };
  },
};

const nowaitExecutions: Scenario = {
  name: 'nowait-executions',
  title: 'Two concurrent NOWAIT executions',
  source: 'pipeline executions under NOWAIT',
  description:
    'A second execution of an intent starts while the first holds its NOWAIT lock and works: exactly one runs, the other fails at once with a lock error instead of queueing.',
  async run(ctx, tally) {
    const rounds = ctx.sizes.nowaitRounds;
    const intents = await createReplayIntents(ctx, this.name, rounds, 'RECEIVED');
    let roundsWithOneWinner = 0;
    const loserMs: number[] = [];
    for (const [i, intent] of intents.entries()) {
      await ctx.checkCancelled();
      let locked!: () => void;
      const firstHoldsLock = new Promise<void>((resolve) => (locked = resolve));
      const exec = (onLocked?: () => void) =>
        tally.call(() => executePipelineStandIn(intent.id, ctx.actor, { workMs: ctx.sizes.nowaitWorkMs, lockTimeoutMs: ctx.lockTimeoutMs, onLocked }));
      const first = exec(locked);
      // The second starts once the first holds the lock (a barrier, not a sleep), so they truly overlap.
      const second = Promise.race([firstHoldsLock, first.then(() => undefined)]).then(() => exec());
      const results = await Promise.all([first, second]);
      const wins = results.filter((r) => r.ok).length;
      const refusals = results.filter((r) => !r.ok && r.code === 'lock_timeout');
      loserMs.push(...refusals.map((r) => r.ms));
      const state = (await intentStates([intent.id])).get(intent.id);
      if (wins === 1 && refusals.length === 1 && state?.version === intent.version + 2 && state.status === 'PROCESSED') roundsWithOneWinner++;
      ctx.progress((i + 1) / rounds, `${i + 1} of ${rounds} rounds`);
    }
    return {
      measures: { rounds, roundsWithOneWinner, loserMaxMs: loserMs.length ? round(Math.max(...loserMs), 3) : NaN, loserMeanMs: loserMs.length ? round(loserMs.reduce((a, b) => a + b, 0) / loserMs.length, 3) : NaN },
      notes: [`each winning execution held the lock for about ${ctx.sizes.nowaitWorkMs} ms of work`],
    };
  },
};

const crossingDeadlock: Scenario = {
  name: 'crossing-deadlock',
  title: 'Crossing-order deadlock, detected and retried',
  source: 'crossing lock orders (deadlocks)',
  description:
    'Two transactions lock two intents in opposite order and meet: Postgres detects the deadlock (after deadlock_timeout), aborts one, and the engine retries it with backoff. Measured from the moment both wait to the victim’s retry committing.',
  async run(ctx, tally) {
    const rounds = ctx.sizes.deadlockRounds;
    const recoveries: number[] = [];
    let recoveredRounds = 0;
    for (const r of range(rounds)) {
      await ctx.checkCancelled();
      const [a, b] = await createReplayIntents(ctx, this.name, 2, 'RECEIVED');
      let arrived = 0;
      let release!: () => void;
      const bothHoldFirstLock = new Promise<void>((resolve) => (release = resolve));
      let formedAt = 0;
      const barrier = async () => {
        if (++arrived === 2) {
          formedAt = performance.now();
          release();
        }
        await bothHoldFirstLock;
      };
      const ends: number[] = [];
      const results = await Promise.all(
        [
          [a.id, b.id],
          [b.id, a.id],
        ].map(([first, second]) =>
          tally.call(() => crossingOrderTransaction(first, second, ctx.actor, { lockTimeoutMs: ctx.lockTimeoutMs, barrier })).finally(() => ends.push(performance.now())),
        ),
      );
      const states = await intentStates([a.id, b.id]);
      const bothCommitted = results.every((x) => x.ok) && [a, b].every((i) => states.get(i.id)?.version === i.version + 2);
      if (bothCommitted) recoveredRounds++;
      if (formedAt > 0) recoveries.push(Math.max(...ends) - formedAt);
      ctx.progress((r + 1) / rounds, `${r + 1} of ${rounds} deadlocks`);
    }
    return {
      measures: {
        rounds,
        deadlocks: tally.engineCount('deadlock_detected'),
        recoveredRounds,
        recoveryMeanMs: recoveries.length ? round(recoveries.reduce((x, y) => x + y, 0) / recoveries.length, 3) : NaN,
        recoveryMaxMs: recoveries.length ? round(Math.max(...recoveries), 3) : NaN,
      },
      latencies: recoveries,
    };
  },
};

const sortedBulk: Scenario = {
  name: 'sorted-bulk',
  title: 'Sorted bulk updates, concurrent over the same intents',
  source: 'bulk updates in sorted lock order',
  description:
    'Concurrent all-or-nothing bulk status updates over the same intents, each given the ids in a random order: the engine locks them in id order, so none deadlocks and none times out.',
  async run(ctx, tally) {
    const { bulkRounds, bulkWorkers, bulkIntents } = ctx.sizes;
    let consistentIntents = 0;
    let intentsTotal = 0;
    for (const r of range(bulkRounds)) {
      await ctx.checkCancelled();
      const intents = await createReplayIntents(ctx, this.name, bulkIntents, 'RECEIVED');
      const ids = intents.map((i) => i.id);
      // Alternating targets (RECEIVED ↔ FAILED are both allowed) so that many of the bulk updates change something.
      const results = await Promise.all(
        range(bulkWorkers).map((w) =>
          tally.call(() => bulkUpdateStatus({ ids: shuffled(ids), status: w % 2 === 0 ? 'FAILED' : 'RECEIVED' }, ctx.actor), (res) => res.alreadyApplied.length === res.intents.length),
        ),
      );
      const states = await intentStates(ids);
      for (const intent of intents) {
        const changedBy = results.filter((x) => x.ok && !x.value.alreadyApplied.includes(intent.id)).length;
        const s = states.get(intent.id);
        if (s && s.version === intent.version + changedBy && s.statusChanges === changedBy) consistentIntents++;
      }
      intentsTotal += intents.length;
      ctx.progress((r + 1) / bulkRounds, `${r + 1} of ${bulkRounds} rounds`);
    }
    const counts = tally.counts();
    return {
      measures: {
        calls: counts.calls,
        succeeded: counts.succeeded,
        deadlocks: counts.deadlocks + tally.failedWith('deadlock'),
        lockTimeouts: counts.lockTimeouts,
        intents: intentsTotal,
        consistentIntents,
      },
    };
  },
};

const throughput: Scenario = {
  name: 'throughput',
  title: 'Status-update throughput, with the raw-SQL baseline',
  source: 'status-update throughput against a raw-SQL baseline',
  description:
    'Fresh intents moved RECEIVED → NORMALIZED, 100 at a time, by the engine and by the same transaction written against plain pg with a pool of the same size — side by side: their batches alternate (engine first, then baseline first), so both meet the same machine. Reports both throughputs, their ratio, and the client CPU each update cost.',
  async run(ctx, tally) {
    const { throughputIntents: n, throughputBatch: batch, throughputRounds: rounds } = ctx.sizes;
    const pool = createBaselinePool(ctx.databaseUrl, ctx.poolSize);
    const baseline = rawUpdateStatusInOneStatement;
    type Side = { ms: number; cpuMs: number };
    const ours: { perSec: number; cpuMs: number }[] = [];
    const raw: { perSec: number; cpuMs: number }[] = [];
    let rawFailures = 0;
    let succeeded = 0;
    const runBatch = async (side: 'ours' | 'raw', slice: Intent[], into: Side) => {
      const cpu = process.cpuUsage();
      const started = performance.now();
      if (side === 'ours') {
        const results = await Promise.all(slice.map((intent) => tally.call(() => updateAsRun(ctx, intent.id, 'NORMALIZED'))));
        succeeded += results.filter((x) => x.ok).length;
      } else {
        const results = await Promise.allSettled(slice.map((intent) => baseline(pool, intent.id, 'NORMALIZED', ctx.actor.name, ctx.lockTimeoutMs, ctx.preparedStatements)));
        rawFailures += results.filter((x) => x.status === 'rejected').length;
      }
      into.ms += performance.now() - started;
      const used = process.cpuUsage(cpu);
      into.cpuMs += (used.user + used.system) / 1000;
    };
    try {
      // Warm-up (not measured): connections opened, statements prepared, code paths warm on both sides.
      const warm = await createReplayIntents(ctx, this.name, Math.min(batch, 50) * 2, 'RECEIVED');
      await unobserved(() =>
        Promise.all(warm.map((w, i) => (i % 2 ? baseline(pool, w.id, 'NORMALIZED', ctx.actor.name, ctx.lockTimeoutMs, ctx.preparedStatements) : updateAsRun(ctx, w.id, 'NORMALIZED')))),
      );
      for (const r of range(rounds)) {
        await ctx.checkCancelled();
        ctx.progress(r / rounds, `round ${r + 1} of ${rounds}: creating ${2 * n} intents`);
        const mine = await createReplayIntents(ctx, this.name, n, 'RECEIVED');
        const theirs = await createReplayIntents(ctx, this.name, n, 'RECEIVED');
        const o: Side = { ms: 0, cpuMs: 0 };
        const b: Side = { ms: 0, cpuMs: 0 };
        for (let i = 0, k = 0; i < n; i += batch, k++) {
          // Batches alternate, and so does who goes first: load from elsewhere on the machine falls on both alike.
          const order = (k + r) % 2 === 0 ? (['ours', 'raw'] as const) : (['raw', 'ours'] as const);
          for (const side of order) await runBatch(side, (side === 'ours' ? mine : theirs).slice(i, i + batch), side === 'ours' ? o : b);
          ctx.progress((r + (i + batch) / n) / rounds, `round ${r + 1} of ${rounds}: engine and raw-SQL baseline, alternating batches`);
        }
        ours.push({ perSec: n / (o.ms / 1000), cpuMs: o.cpuMs / n });
        raw.push({ perSec: n / (b.ms / 1000), cpuMs: b.cpuMs / n });
      }
    } finally {
      await pool.end();
    }
    const oursPerSec = median(ours.map((x) => x.perSec));
    const rawPerSec = median(raw.map((x) => x.perSec));
    const ratios = range(rounds).map((r) => ours[r].perSec / raw[r].perSec);
    return {
      measures: {
        calls: rounds * n,
        inFlight: batch,
        succeeded,
        throughputPerSec: round(oursPerSec, 1),
        baselinePerSec: round(rawPerSec, 1),
        baselineRatio: round(median(ratios), 3),
        cpuMsPerUpdate: round(median(ours.map((x) => x.cpuMs)), 3),
        baselineCpuMsPerUpdate: round(median(raw.map((x) => x.cpuMs)), 3),
        baselineFailures: rawFailures,
      },
      notes: [
        `rounds (engine /s vs baseline /s = share): ${range(rounds).map((r) => `${Math.round(ours[r].perSec)} vs ${Math.round(raw[r].perSec)} = ${Math.round(ratios[r] * 100)} %`).join('; ')}; medians reported`,
        `client CPU per update (this process): engine ${round(median(ours.map((x) => x.cpuMs)), 3)} ms, baseline ${round(median(raw.map((x) => x.cpuMs)), 3)} ms`,
        `pool size ${ctx.poolSize} on both sides, ${batch} updates in flight at a time; on both sides the engine's one statement per update, ${ctx.preparedStatements ? 'named (prepared) statements' : 'unnamed statements'}`,
        ...(rawFailures ? [`${rawFailures} baseline updates failed`] : []),
      ],
    };
  },
};

const lockLatency: Scenario = {
  name: 'lock-latency',
  title: 'Uncontended lock acquisition',
  source: 'uncontended lock latency',
  description:
    'Intents locked one after another with nobody else around: open a transaction, SELECT … FOR UPDATE (labelled, with the lock timeout set, as the engine does), commit. The take-and-release time is judged; the lock statement alone is shown too.',
  async run(ctx, tally) {
    const intents = await createReplayIntents(ctx, this.name, ctx.sizes.lockLatencyIntents, 'RECEIVED');
    const acquire: number[] = [];
    for (const [i, intent] of intents.entries()) {
      if (i % 10 === 0) await ctx.checkCancelled();
      const r = await tally.call(() => lockAndRelease(intent.id, ctx.lockTimeoutMs));
      if (r.ok) acquire.push(r.value.acquireMs);
      if (i % 10 === 9) ctx.progress((i + 1) / intents.length, `${i + 1} of ${intents.length} locks`);
    }
    const a = summarize(acquire);
    return { measures: { calls: intents.length, acquireP50Ms: a?.p50 ?? NaN, acquireP95Ms: a?.p95 ?? NaN } };
  },
};

export const SCENARIOS: Record<ScenarioName, Scenario> = {
  'status-race': statusRace,
  'corrections-3': corrections('corrections-3', () => 3, 'concurrent corrections'),
  'corrections-50': corrections('corrections-50', (s) => s.manyCorrections, 'version-checked corrections under contention'),
  'identical-transitions': identicalTransitions,
  'nowait-executions': nowaitExecutions,
  'crossing-deadlock': crossingDeadlock,
  'sorted-bulk': sortedBulk,
  throughput,
  'lock-latency': lockLatency,
};

export function describeScenarios() {
  return Object.values(SCENARIOS).map(({ name, title, source, description }) => ({ name, title, source, description }));
}

/** Runs one scenario, counting its outcomes, and judges it. Only cancellation escapes; any other failure is recorded. */
export async function runScenario(name: ScenarioName, ctx: ScenarioContext): Promise<ScenarioResult> {
  const scenario = SCENARIOS[name];
  const tally = new OutcomeTally();
  const startedAt = new Date().toISOString();
  const started = performance.now();
  let measured: Measured = { measures: {} };
  let error: string | undefined;
  try {
    measured = await observeOutcomes(tally.observer, () => scenario.run(ctx, tally));
  } catch (err) {
    if (err instanceof ReplayCancelledError) throw err;
    error = err instanceof Error ? err.message : String(err);
  }
  const latency = summarize(measured.latencies ?? tally.latencies);
  const measures: Record<string, number> = { ...measured.measures };
  // `samples`: how many operations the percentiles rest on (a small run's are not judged, nor compared).
  if (latency) Object.assign(measures, { p50Ms: latency.p50, p95Ms: latency.p95, p99Ms: latency.p99, samples: latency.count });
  const checks = error ? [] : checksFor(name, measures, ctx.targets);
  return {
    name,
    title: scenario.title,
    source: scenario.source,
    startedAt,
    durationMs: round(performance.now() - started, 1),
    latency,
    outcomes: tally.counts(),
    measures,
    checks,
    verdict: verdictOf(checks, error),
    notes: measured.notes ?? [],
    ...(error ? { error } : {}),
  };
}
