import type { InvariantReport } from '../../lib/invariants/run';
import { formatReport } from '../../lib/invariants/run';
import type { Instance } from './api';
import type { ChaosClients } from './clients';
import type { Fault } from './faults';
import type { LiveProbe } from './live-probe';

/** What a chaos run did and found, as the log says it and as test-results/chaos/summary*.json keeps it. */
export type RunFindings = {
  clients: ChaosClients;
  probe: LiveProbe | null;
  instances: Instance[];
  faults: Fault[];
  injected: Record<string, string[]>;
  ranMs: number;
  drained: boolean;
  missing: string[];
  pipelineRuns: Record<string, Record<string, number>>;
  claimsRescued: number;
  invariants: InvariantReport;
};

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const totalOperations = (f: RunFindings) => Object.values(f.clients.stats.operations).reduce((n, byStatus) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
const liveLatencies = (f: RunFindings) => [...(f.probe?.latenciesMs ?? [])].sort((a, b) => a - b);
const notInjected = (f: RunFindings) => f.faults.filter((x) => !f.injected[x.kind]?.length).map((x) => x.kind);

/** Every broken promise of the run, in words. */
export function problemsOf(f: RunFindings): string[] {
  return [
    ...f.clients.stats.problems,
    ...f.missing,
    ...(f.probe?.misses ?? []).map((m) => `live feed: ${m}`),
    ...(f.drained ? [] : ['the outbox did not drain into the stream']),
    ...notInjected(f).map((k) => `fault never injected: ${k}`),
  ];
}

/** The log's account: operations, faults, pipeline runs, the live feed's latency, the invariants and the problems. */
export function sayFindings(f: RunFindings, say: (line: string) => void): void {
  const totalOps = totalOperations(f);
  const ranS = f.ranMs / 1000;
  say(`operations: ${totalOps} in ${ranS.toFixed(0)} s (${Math.round(totalOps / ranS)}/s), ${f.clients.stats.acks.length} acknowledged changes`);
  for (const [op, byStatus] of Object.entries(f.clients.stats.operations).sort()) {
    say(`  ${op.padEnd(18)} ${Object.entries(byStatus).sort().map(([s, n]) => `${s}×${n}`).join('  ')}`);
  }
  say('faults injected:');
  for (const [kind, list] of Object.entries(f.injected)) say(`  ${kind}: ${list.length} (e.g. ${list[0]})`);
  const ryw = f.clients.stats.readYourWrites;
  if (ryw.checked || ryw.unanswered) {
    say(
      `read your writes: ${ryw.checked} reads after a command checked (${Object.entries(ryw.bySource).sort().map(([s, n]) => `${s}×${n}`).join(' ')}); ` +
        `${ryw.unanswered} without an answer to judge; ${ryw.withoutPosition} command answer(s) without Bridge-Commit-Lsn`,
    );
  }
  if (notInjected(f).length) say(`  never injected: ${notInjected(f).join(', ')}`);
  say(`pipeline runs: ${Object.entries(f.pipelineRuns).map(([door, byStatus]) => `${door} ${Object.entries(byStatus).map(([st, n]) => `${st}×${n}`).join(' ')}`).join('; ') || 'none'}; ${f.claimsRescued} claim(s) rescued from killed workers`);
  if (f.probe) {
    const latencies = liveLatencies(f);
    say(
      `live across instances (${f.instances[0].name} → ${f.instances[1].name}): ${latencies.length} changes seen, p50 ${percentile(latencies, 50).toFixed(0)} ms, ` +
        `p95 ${percentile(latencies, 95).toFixed(0)} ms, max ${(latencies.at(-1) ?? NaN).toFixed(0)} ms; ${f.probe.deliveredAfterOutage} more delivered after an instance restart; ${f.probe.missed} missed`,
    );
  }
  for (const line of formatReport(f.invariants)) say(line);
  for (const p of problemsOf(f).slice(0, 30)) say(`PROBLEM: ${p}`);
}

/** The summary file's content; `setup` says how the run was configured. */
export function summaryOf(f: RunFindings, setup: { seconds: number; instances: number; workers: number; clients: number; pgbouncer: boolean; replica: boolean; nats: boolean }) {
  const problems = problemsOf(f);
  const latencies = liveLatencies(f);
  const { seconds, ...processes } = setup;
  return {
    date: new Date().toISOString(),
    seconds,
    ranSeconds: Math.round(f.ranMs / 1000),
    ...processes,
    operations: f.clients.stats.operations,
    totalOperations: totalOperations(f),
    acknowledged: f.clients.stats.acks.length,
    pipelineRuns: f.pipelineRuns,
    claimsRescued: f.claimsRescued,
    faults: Object.fromEntries(Object.entries(f.injected).map(([k, v]) => [k, v.length])),
    readYourWrites: f.clients.stats.readYourWrites,
    live: {
      samples: latencies.length,
      p50Ms: percentile(latencies, 50),
      p95Ms: percentile(latencies, 95),
      maxMs: latencies.at(-1) ?? null,
      deliveredAfterOutage: f.probe?.deliveredAfterOutage ?? 0,
      missed: f.probe?.missed ?? 0,
    },
    invariants: f.invariants,
    problems,
    violations: f.invariants.violationCount + problems.length,
  };
}
