/**
 * The benchmark's rows that are not replay scenarios (scripts/bench.ts runs them after the replay):
 * - the JSON API door: status updates through the console's server (scripts/serve.ts, serving the production build) with a token, 100 in flight, against the naive five-step
 *   locked transaction written with plain `pg` (lib/replay/baseline.ts rawUpdateStatus) on the same database, their
 *   batches alternating so both meet the same machine;
 * - 1,000 uncontended corrections under the configured correction strategy, counting the row locks they took (as
 *   their statements reported them).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { freePort } from '../lib/db/embedded';
import { ensureBuild, root, startNext } from './next-server';

type Say = (line: string) => void;

/** Runs `work` for every item, `inFlight` at a time; answers the items per second. */
async function throughput<T>(items: T[], inFlight: number, work: (item: T) => Promise<boolean>): Promise<{ perSec: number; failed: number }> {
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(inFlight, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++];
        if (!(await work(item).catch(() => false))) failed++;
      }
    }),
  );
  return { perSec: items.length / ((performance.now() - started) / 1000), failed };
}

async function freshIntents(n: number, status: 'RECEIVED' | 'PROCESSED'): Promise<string[]> {
  const { db } = await import('../lib/db/client');
  const rows = await db().$queryRaw<{ id: string }[]>`
    INSERT INTO intents (id, status, payload, source, is_replay)
    SELECT gen_random_uuid(), ${status}::"IntentStatus", jsonb_build_object('bench', g), 'bench', true FROM generate_series(1, ${n}) g
    RETURNING id::text AS id`;
  return rows.map((r) => r.id);
}

/**
 * One HTTP request on a keep-alive agent with as many sockets as requests in flight; true on a 200. Node's own http
 * client, not fetch: the client shares the machine with the server it measures, and fetch (undici's WHATWG layer)
 * spends much more client CPU per request, which the API side was charged and the baseline was not.
 */
function send(agent: Agent, url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const body = options.body;
    const headers = body === undefined ? options.headers : { ...options.headers, 'content-length': String(Buffer.byteLength(body)) };
    const req = request(url, { method: options.method ?? 'GET', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** CPU time (user + system) a process has used so far, in ms, from Linux's /proc; NaN elsewhere. */
function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerSecond();
  } catch {
    return Number.NaN;
  }
}

let ticks: number | undefined;
function clockTicksPerSecond(): number {
  ticks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  return ticks;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export type ApiRow = {
  apiPerSec: number;
  baselinePerSec: number;
  ratio: number;
  apiFailed: number;
  baselineFailed: number;
  rounds: string[];
  /** The same server's own floor, same concurrency: GET /api/health (one SELECT 1) and an unknown /api path (no database). */
  healthPerSec: number;
  unknownPerSec: number;
  /** Reads of one intent each (GET /api/intents/{id}), in every round beside the updates, same server and concurrency. */
  readPerSec: number;
  /** The median over rounds of reads per second over status updates per second through the same server. */
  readToCommand: number;
  /** The server process's CPU time per request (median of rounds), from /proc; NaN where there is none. */
  serverCpuMs: { update: number; read: number };
};

export async function measureApiDoor(databaseUrl: string, say: Say, options: { rounds: number; requests: number; inFlight: number; warmup: number; warmupBatches: number }): Promise<ApiRow> {
  const { bootstrapAuth } = await import('../lib/auth/bootstrap');
  const { generateApiToken } = await import('../lib/auth/tokens');
  const { createBaselinePool, rawUpdateStatus } = await import('../lib/replay/baseline');
  const { concurrencySettings } = await import('../lib/env');
  ensureBuild(say, process.env.BENCH_SKIP_BUILD === '1');
  const token = generateApiToken();
  await bootstrapAuth({ bootstrapToken: token });
  const settings = concurrencySettings();
  const server = await startNext({ port: await freePort(), databaseUrl, logFile: join(root, 'test-results', 'bench-next-server.log'), env: { BRIDGE_ENV: 'development' } });
  const pool = createBaselinePool(databaseUrl, settings.poolSize);
  say(`JSON API row: the console's server (scripts/serve.ts, the production build) at ${server.url}, ${options.requests} status updates per side and round, ${options.inFlight} in flight`);
  const agent = new Agent({ keepAlive: true, maxSockets: options.inFlight });
  const body = JSON.stringify({ status: 'NORMALIZED' });
  const api = (id: string) =>
    send(agent, `${server.url}/api/intents/${id}/status`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  const raw = (id: string) => rawUpdateStatus(pool, id, 'NORMALIZED', 'bench:baseline', settings.lockTimeoutMs, settings.preparedStatements).then(() => true);
  try {
    // Warm both sides (compilation, connections, prepared statements) before anything is timed, each until it runs
    // at a steady rate. The server needs far more than plain pg: Next's request path runs through hundreds of
    // functions that V8 optimises only after many calls, and after a fixed warm-up of a few hundred requests each
    // timed round still ran faster than the last.
    const warm = async (side: (id: string) => Promise<boolean>) => {
      let before = 0;
      for (let batch = 1; batch <= options.warmupBatches; batch++) {
        const { perSec } = await throughput(await freshIntents(options.warmup, 'RECEIVED'), options.inFlight, side);
        if (perSec <= before * 1.05) return batch;
        before = perSec;
      }
      return options.warmupBatches;
    };
    const read = (id: string) => send(agent, `${server.url}/api/intents/${id}`, { headers: { authorization: `Bearer ${token}` } });
    say(`JSON API warm-up: the server steady after ${await warm(api)} batches of ${options.warmup} (updates) and ${await warm(read)} (reads), plain pg after ${await warm(raw)}`);
    const ours: { perSec: number; failed: number }[] = [];
    const theirs: { perSec: number; failed: number }[] = [];
    const reads: { perSec: number; failed: number }[] = [];
    // The server's own CPU time per request: unlike a rate, it hardly moves with what else the machine runs.
    const [updateCpu, readCpu]: number[][] = [[], []];
    const onServer = async <T>(side: () => Promise<T>, requests: number, into: number[]): Promise<T> => {
      const before = cpuMsOf(server.pid);
      const result = await side();
      into.push((cpuMsOf(server.pid) - before) / requests);
      return result;
    };
    for (let r = 0; r < options.rounds; r++) {
      const [a, b, c] = [await freshIntents(options.requests, 'RECEIVED'), await freshIntents(options.requests, 'RECEIVED'), await freshIntents(options.requests, 'RECEIVED')];
      // The order turns each round, so no side always runs first (or last) on a machine whose load moves.
      const sides = [
        async () => void ours.push(await onServer(() => throughput(a, options.inFlight, api), a.length, updateCpu)),
        async () => void theirs.push(await throughput(b, options.inFlight, raw)),
        async () => void reads.push(await onServer(() => throughput(c, options.inFlight, read), c.length, readCpu)),
      ];
      for (let s = 0; s < sides.length; s++) await sides[(s + r) % sides.length]();
      say(`JSON API round ${r + 1}: ${Math.round(ours[r].perSec)} /s vs baseline ${Math.round(theirs[r].perSec)} /s; reads ${Math.round(reads[r].perSec)} /s`);
    }
    const ratios = ours.map((o, i) => o.perSec / theirs[i].perSec);
    const floor = (path: string) => throughput(Array.from({ length: options.requests }, () => path), options.inFlight, (p) => send(agent, `${server.url}${p}`).then(() => true));
    const health = await floor('/api/health');
    const unknown = await floor('/api/no-such-endpoint');
    return {
      healthPerSec: health.perSec,
      readPerSec: median(reads.map((o) => o.perSec)),
      readToCommand: median(reads.map((o, i) => o.perSec / ours[i].perSec)),
      serverCpuMs: { update: median(updateCpu), read: median(readCpu) },
      unknownPerSec: unknown.perSec,
      apiPerSec: median(ours.map((o) => o.perSec)),
      baselinePerSec: median(theirs.map((o) => o.perSec)),
      ratio: median(ratios),
      apiFailed: [...ours, ...reads].reduce((n, o) => n + o.failed, 0),
      baselineFailed: theirs.reduce((n, o) => n + o.failed, 0),
      rounds: ours.map((o, i) => `${Math.round(o.perSec)} vs ${Math.round(theirs[i].perSec)}`),
    };
  } finally {
    agent.destroy();
    await pool.end().catch(() => undefined);
    await server.stop();
  }
}

export type UncontendedRow = { corrections: number; succeeded: number; rowLocks: number; strategy: string; perSec: number };

/** 1,000 corrections, each of its own intent, 10 at a time, under the configured strategy: how many took the row lock. */
export async function countUncontendedRowLocks(n = 1000): Promise<UncontendedRow> {
  const { reevaluateIntent, rowLocksTaken } = await import('../lib/intents/commands');
  const { concurrencySettings } = await import('../lib/env');
  const ids = await freshIntents(n, 'PROCESSED');
  const before = rowLocksTaken.reevaluate ?? 0;
  let succeeded = 0;
  const { perSec } = await throughput(ids, 10, async (id) => {
    await reevaluateIntent({ id, diff: { corrected: true }, source: 'bench', reason: 'uncontended' }, { name: 'bench:uncontended' });
    succeeded++;
    return true;
  });
  return { corrections: n, succeeded, rowLocks: (rowLocksTaken.reevaluate ?? 0) - before, strategy: concurrencySettings().strategies.reevaluate, perSec };
}
