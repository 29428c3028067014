/**
 * `npm run measure:intents-page [-- --preset 1m] [--count N] [--concurrency 20] [--runs 30] [--seed] [--skip-build]
 * [--data-dir DIR] [--replica [--sides primary,replica]]`:
 * how fast the Intents page and its reads answer at scale. A measurement, not a test: it prints figures and never
 * fails on them (a request that does not answer 200 is reported as such).
 *
 * Against a production build (`next start`): on a throw-away embedded PostgreSQL seeded with `--count` intents by
 * lib/seed/large.ts, or on DATABASE_URL as it is (`--seed` adds the intents there). `--preset 1m` means a million
 * intents; seeding them takes minutes, so for repeated runs seed a database once (`npm run seed:large -- --count
 * 1000000` with DATABASE_URL) and point the measurement at it. Signed in as a viewer (a session cookie, as a browser
 * sends it). `--data-dir DIR` keeps the throw-away PostgreSQL's data there instead (its database `bridge`, the one
 * `BRIDGE_DATA_DIR=DIR npm run seed:large` seeds): it is seeded only while it holds no intents, so a second run
 * reuses the first one's million.
 *
 * `--replica`: the same measurements with the console's reads on a streaming replica, side by side with reads on the
 * primary, in one run. The embedded primary (throw-away or `--data-dir`) is vacuumed and analysed, a hot standby is
 * made of it (lib/db/standby.ts) and waits until it has replayed everything, then a console server runs once per
 * side — without DATABASE_READ_URL, then with it pointing at the standby (`--sides` sets the order, and may repeat
 * a side) — and each side's report adds the CPU time the primary's and the standby's PostgreSQL processes and the
 * console server used in each phase, read from /proc, and where the API said its reads were served
 * (`Bridge-Read-Source`).
 *
 * Measured, one request at a time after a warm-up (time to first byte and to the complete response):
 *   - status counts, and status counts under a search (what the filter bar reads);
 *   - the Intents page, its next page (link, in-app RSC, JSON API), a status filter;
 *   - searches as people paste them: a full id, a short id, a source, displayed payload text, a raw JSON fragment,
 *     free text, a time range;
 * and then `--concurrency` operators refreshing at once (each fetches the list and the counts, as a page did on
 * every live change): p95 of one operator's refresh, and requests per second over the whole run.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { freePort, startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';
import { startStandby, type Standby } from '../lib/db/standby';
import { ensureBuild, root, startNext, type NextServer } from './next-server';

const say = (line: string) => console.log(`[measure] ${line}`);

const PRESETS: Record<string, number> = { '100k': 100_000, '1m': 1_000_000 };

const { values } = parseArgs({
  options: {
    preset: { type: 'string' },
    count: { type: 'string' },
    runs: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '20' },
    seed: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
    only: { type: 'string' },
    'data-dir': { type: 'string' },
    replica: { type: 'boolean', default: false },
    sides: { type: 'string' },
  },
});
if (values.preset && !(values.preset in PRESETS)) throw new Error(`--preset must be one of ${Object.keys(PRESETS).join(', ')}`);
const count = z.coerce.number().int().min(0).parse(values.count ?? (values.preset ? PRESETS[values.preset] : 100_000));
const runs = z.coerce.number().int().min(1).max(10_000).parse(values.runs);
const warmup = z.coerce.number().int().min(0).max(1_000).parse(values.warmup);
const concurrency = z.coerce.number().int().min(1).max(500).parse(values.concurrency);
type Side = 'primary' | 'replica';
const sides = z
  .array(z.enum(['primary', 'replica']))
  .min(1)
  .parse((values.sides ?? (values.replica ? 'primary,replica' : 'primary')).split(',').map((x) => x.trim()));
const withReplica = sides.includes('replica');
if (withReplica && process.env.DATABASE_URL) throw new Error('--replica makes its standby from the embedded primary\'s files: unset DATABASE_URL (use --data-dir to keep the data)');

type Sample = { ttfb: number; total: number; bytes: number; status: number; source: string | null };

async function timeRequest(url: string, headers: Record<string, string>): Promise<Sample> {
  const start = performance.now();
  const res = await fetch(url, { headers, redirect: 'manual', cache: 'no-store' });
  let ttfb = -1;
  let bytes = 0;
  if (res.body) {
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (ttfb < 0) ttfb = performance.now() - start;
      if (done) break;
      bytes += value.byteLength;
    }
  }
  if (ttfb < 0) ttfb = performance.now() - start;
  return { ttfb, total: performance.now() - start, bytes, status: res.status, source: res.headers.get('bridge-read-source') };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

type Stats = { p50: number; p95: number; max: number };
const stats = (xs: number[]): Stats => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p95: percentile(s, 95), max: s[s.length - 1] };
};

/** Where the API said the reads were served (`Bridge-Read-Source`), e.g. `replica-1 ×30`; pages send no such header. */
function servedBy(samples: Sample[]): string {
  const by = new Map<string, number>();
  for (const s of samples) if (s.source) by.set(s.source, (by.get(s.source) ?? 0) + 1);
  return [...by].map(([name, n]) => `${name} ×${n}`).join(', ');
}

type Result = { name: string; ttfb: Stats; total: Stats; bytes: number; statuses: string; served: string };

async function measure(name: string, url: string, headers: Record<string, string>): Promise<Result> {
  for (let i = 0; i < warmup; i++) await timeRequest(url, headers);
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) samples.push(await timeRequest(url, headers));
  const statuses = [...new Set(samples.map((s) => s.status))].join('/');
  return { name, ttfb: stats(samples.map((s) => s.ttfb)), total: stats(samples.map((s) => s.total)), bytes: samples[0].bytes, statuses, served: servedBy(samples) };
}

/**
 * CPU time (user + system, seconds) a process and its children have used, from /proc/<pid>/stat: for a postmaster,
 * the server's whole work — the live backends' own times, plus, in the postmaster's cutime and cstime, those of the
 * backends that ended (it waits for each one). Only on Linux; elsewhere null, and the report leaves it out.
 */
const ticksPerSecond = (() => {
  const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  return Number(out.stdout?.trim()) || 100;
})();

function procStat(pid: number): { ppid: number; own: number; children: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces, inside parentheses): state is field 3.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const field = (n: number) => Number(f[n - 3]);
    return { ppid: field(4), own: field(14) + field(15), children: field(16) + field(17) };
  } catch {
    return null;
  }
}

function cpuSeconds(pid: number | undefined, withChildren: boolean): number | null {
  if (!pid) return null;
  const root = procStat(pid);
  if (!root) return null;
  let ticks = root.own + root.children;
  if (withChildren) {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const child = procStat(Number(entry));
      if (child?.ppid === pid) ticks += child.own;
    }
  }
  return ticks / ticksPerSecond;
}

function postmasterPid(dataDir: string): number | undefined {
  try {
    return Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
  } catch {
    return undefined;
  }
}

type Cpu = { primary: number | null; replica: number | null; server: number | null };
type Meters = { primaryDir: string; replicaDir?: string; serverPid?: number };

function readCpu(m: Meters): Cpu {
  return {
    primary: cpuSeconds(postmasterPid(m.primaryDir), true),
    replica: m.replicaDir ? cpuSeconds(postmasterPid(m.replicaDir), true) : null,
    server: cpuSeconds(m.serverPid, true),
  };
}

const minus = (a: number | null, b: number | null) => (a === null || b === null ? null : a - b);

/** `work`, and the CPU each process used meanwhile. */
async function metered<T>(m: Meters, work: () => Promise<T>): Promise<{ value: T; cpu: Cpu; seconds: number }> {
  const before = readCpu(m);
  const started = performance.now();
  const value = await work();
  const seconds = (performance.now() - started) / 1000;
  const after = readCpu(m);
  return { value, seconds, cpu: { primary: minus(after.primary, before.primary), replica: minus(after.replica, before.replica), server: minus(after.server, before.server) } };
}

/** `n` operators at once, each refreshing `urls` in parallel, `rounds` times: one operator's refresh time, and req/s. */
async function measureConcurrent(urls: string[], headers: Record<string, string>, n: number, rounds: number) {
  const refresh = async () => {
    const start = performance.now();
    const samples = await Promise.all(urls.map((u) => timeRequest(u, headers)));
    return { ms: performance.now() - start, samples };
  };
  for (let i = 0; i < Math.min(warmup, 2); i++) await Promise.all(Array.from({ length: n }, refresh));
  const times: number[] = [];
  const samples: Sample[] = [];
  const started = performance.now();
  for (let r = 0; r < rounds; r++) {
    const done = await Promise.all(Array.from({ length: n }, refresh));
    for (const d of done) {
      times.push(d.ms);
      samples.push(...d.samples);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    refresh: stats(times),
    perSecond: (rounds * n * urls.length) / seconds,
    statuses: [...new Set(samples.map((s) => s.status))].join('/'),
    served: servedBy(samples),
  };
}

/** The database to measure on, migrated and seeded as asked; returns its intents' count. */
async function prepareDatabase(holder: { database?: EmbeddedDb }): Promise<{ url: string; intents: number }> {
  let url = process.env.DATABASE_URL;
  let seed = values.seed;
  if (!url) {
    const dataDir = values['data-dir'] ? resolve(values['data-dir']) : undefined;
    holder.database = await startEmbeddedPostgres(dataDir ? { dataDir, persistent: true } : { persistent: false, database: 'bridge_measure' });
    url = holder.database.url;
    say(`${dataDir ? `embedded PostgreSQL (data in ${dataDir})` : 'throw-away embedded PostgreSQL'} on port ${holder.database.port}`);
  }
  process.env.DATABASE_URL = url;
  await migrate(url);
  const { db } = await import('../lib/db/client');
  // A throw-away or kept embedded database is seeded while it holds no intents; DATABASE_URL only with --seed.
  if (holder.database && !seed) {
    const [{ any }] = await db().$queryRaw<{ any: boolean }[]>`SELECT EXISTS (SELECT 1 FROM intents) AS any`;
    seed = !any;
  }
  if (seed && count > 0) {
    const { seedLargeData } = await import('../lib/seed/large');
    say(`seeding ${count.toLocaleString('en')} intents…`);
    const r = await seedLargeData(count);
    say(`seeded in ${(r.ms / 1000).toFixed(1)} s (${r.auditEvents.toLocaleString('en')} audit events)`);
  }
  const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM intents`;
  say(`the database holds ${Number(n).toLocaleString('en')} intents`);
  return { url, intents: Number(n) };
}

/**
 * Before a standby is made: a standby cannot run VACUUM or ANALYZE, so its statistics and visibility map (what lets
 * the list's index-only scans skip the table) are the ones the primary had, replayed; and with data checksums
 * (initdb's default since PostgreSQL 18) the hint bits it sets on rows stay in its memory only, so a row the primary
 * never vacuumed is checked against the commit log again after every eviction. VACUUM (ANALYZE) on the primary
 * writes all three, and the copy carries them, so both sides read the same table.
 */
async function vacuumAnalyze(): Promise<void> {
  const { db } = await import('../lib/db/client');
  const started = performance.now();
  await db().$executeRaw`VACUUM (ANALYZE)`;
  await db().$executeRaw`CHECKPOINT`;
  say(`VACUUM (ANALYZE) and CHECKPOINT on the primary in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

/** A signed-in viewer's session cookie, through the same domain functions the console uses. */
async function viewerCookie(): Promise<string> {
  const { insertUser } = await import('../lib/auth/users');
  const { createSession } = await import('../lib/auth/sessions');
  const { sessionCookieName } = await import('../lib/auth/cookies');
  const user = await insertUser({ username: `measure-${Date.now().toString(36)}`, roles: ['viewer'], password: 'measurement only, long enough', mustChangePassword: false, createdBy: 'measure' });
  const { secret } = await createSession(user.id, { userAgent: 'measure-intents-page' });
  return `${sessionCookieName(false)}=${secret}`;
}

type Samples = { cursor: string; sample: { id: string; source: string; amount: string }; dayFrom: Date; dayTo: Date; pageSize: number };

/**
 * The second page's cursor, and search samples taken from the data itself: an intent deep in the list (not on the
 * first page), its source, an amount as the table shows it, and a one-day window ten days back.
 */
async function samplesFrom(intents: number): Promise<Samples> {
  const { db } = await import('../lib/db/client');
  const { listIntents } = await import('../lib/intents/queries');
  const { PAGE_SIZE } = await import('../lib/console/filters');
  const first = await listIntents({ limit: PAGE_SIZE });
  if (!first.nextCursor) throw new Error('there is no second page: seed more intents');
  const [sample] = await db().$queryRaw<{ id: string; source: string; amount: string; at: Date }[]>`
    SELECT id::text AS id, source, payload->>'amount' AS amount, updated_at AS at FROM intents
    WHERE NOT is_replay AND payload ? 'amount' ORDER BY updated_at DESC, id DESC OFFSET ${Math.min(intents - 1, 5000)} LIMIT 1`;
  const dayFrom = new Date(Date.now() - 10 * 86_400_000);
  return { cursor: encodeURIComponent(first.nextCursor), sample, dayFrom, dayTo: new Date(dayFrom.getTime() + 86_400_000), pageSize: PAGE_SIZE };
}

type Plan = [string, string, Record<string, string>][];

/** Every request measured one at a time, named as the report says it. */
async function requestPlan(base: string, cookie: string, s: Samples): Promise<Plan> {
  const { cursor, sample, dayFrom, dayTo, pageSize } = s;
  const html = { cookie, accept: 'text/html' };
  const json = { cookie, accept: 'application/json' };
  const page = (params: Record<string, string>) => `${base}/intents?${new URLSearchParams(params)}`;
  const counts = (params: Record<string, string> = {}) => countsUrl(base, params);
  // An in-app navigation carries `_rsc`, a hash of its router headers; Next redirects a request without the right
  // one to the URL that has it. Ask once, then measure that URL as the browser would fetch it.
  const rscHeaders = { cookie, rsc: '1' };
  const probe = await fetch(`${base}/intents?cursor=${cursor}`, { headers: rscHeaders, redirect: 'manual' });
  await probe.body?.cancel();
  const rscUrl = probe.status >= 300 && probe.status < 400 ? new URL(probe.headers.get('location')!, base).href : `${base}/intents?cursor=${cursor}`;
  return [
    // The floor on this machine at this moment: an open route with one trivial query. Compare the others to it.
    ['reference: /api/health', `${base}/api/health`, json],
    ['status counts', counts(), json],
    ['status counts under a search ("Osaka")', counts({ q: 'Osaka' }), json],
    ['Intents page', `${base}/intents`, html],
    ['next page (link)', `${base}/intents?cursor=${cursor}`, html],
    ['next page (in-app, RSC)', rscUrl, rscHeaders],
    ['next page (JSON API)', `${base}/api/intents?limit=${pageSize}&cursor=${cursor}`, json],
    ['status filter FAILED', page({ status: 'FAILED' }), html],
    ['search: free text "Osaka"', page({ q: 'Osaka' }), html],
    ['search: full id', page({ q: sample.id }), html],
    ['search: short id', page({ q: sample.id.slice(0, 8) }), html],
    ['search: source', page({ q: sample.source }), html],
    ['search: displayed text "city: Osaka"', page({ q: 'city: Osaka' }), html],
    [`search: displayed text "amount: ${sample.amount}"`, page({ q: `amount: ${sample.amount}` }), html],
    ['search: raw JSON {"city":"Kyoto"}', page({ q: '{"city":"Kyoto"}' }), html],
    ['filter: source', page({ source: sample.source }), html],
    ['filter: one day, ten days back', page({ from: dayFrom.toISOString(), to: dayTo.toISOString() }), html],
    ['counts under a time range', counts({ from: dayFrom.toISOString(), to: dayTo.toISOString() }), json],
    ['short id page /intents/<8 chars>', `${base}/intents/${sample.id.slice(0, 8)}`, html],
  ];
}

const countsUrl = (base: string, params: Record<string, string> = {}) => `${base}/api/console/intents/counts${Object.keys(params).length ? `?${new URLSearchParams(params)}` : ''}`;

type Concurrent = Awaited<ReturnType<typeof measureConcurrent>> & { cpu: Cpu; seconds: number };

/** Operators refreshing at once: list + counts, list only (counts travel in the live stream), and /api/health as the reference. */
async function measureTogether(base: string, json: Record<string, string>, pageSize: number, meters: Meters) {
  const phase = async (urls: string[]): Promise<Concurrent> => {
    const { value, cpu, seconds } = await metered(meters, () => measureConcurrent(urls, json, concurrency, runs));
    return { ...value, cpu, seconds };
  };
  say(`${concurrency} operators refreshing at once (list + counts each), ${runs} rounds`);
  const together = await phase([`${base}/api/intents?limit=${pageSize}`, countsUrl(base)]);
  say(`${concurrency} operators refreshing at once (list only: counts travel in the live stream), ${runs} rounds`);
  const listOnly = await phase([`${base}/api/intents?limit=${pageSize}`]);
  say(`${concurrency} clients at once on /api/health twice each (the reference), ${runs} rounds`);
  const reference = await phase([`${base}/api/health`, `${base}/api/health`]);
  return { together, listOnly, reference };
}

type SideRun = {
  side: Side;
  results: Result[];
  sequential: { cpu: Cpu; seconds: number };
  together: Concurrent;
  listOnly: Concurrent;
  reference: Concurrent;
  load: { start: number[]; end: number[] };
};

const ms = (x: number | undefined) => (x === undefined ? '—' : `${x.toFixed(0)} ms`);
const loadText = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
const sideName = (side: Side) => (side === 'replica' ? 'reads on the replica' : 'reads on the primary');

/** CPU seconds over a phase, and the share of one core over its wall time. */
function cpuText(seconds: number | null, wall: number): string {
  return seconds === null ? '—' : `${seconds.toFixed(1)} s (${((100 * seconds) / wall).toFixed(0)} % of a core)`;
}

function printReport(intents: number, embedded: boolean, runsBySide: SideRun[]): void {
  const count = intents.toLocaleString('en');
  const metersShown = runsBySide.some((r) => r.together.cpu.primary !== null);
  const replicaShown = runsBySide.some((r) => r.together.cpu.replica !== null);
  console.log(`\nIntents page with ${count} intents, next start, ${embedded ? 'embedded PostgreSQL' : 'given database'}, ${runs} requests after ${warmup} warm-up\n`);
  console.log(`| ${count} intents | ${runsBySide.map((r) => sideName(r.side)).join(' | ')} |`);
  console.log(`|---|${runsBySide.map(() => '---').join('|')}|`);
  const row = (label: string, cell: (r: SideRun) => string) => console.log(`| ${label} | ${runsBySide.map(cell).join(' | ')} |`);
  const by = (r: SideRun, name: string) => r.results.find((x) => x.name === name);
  const conc = (c: Concurrent) => `${ms(c.refresh.p95)} (${c.perSecond.toFixed(0)} req/s)`;
  if (runsBySide.some((r) => by(r, 'status counts'))) row('status counts (`/api/console/intents/counts`), sequential p95', (r) => ms(by(r, 'status counts')?.total.p95));
  if (runsBySide.some((r) => by(r, 'status counts under a search ("Osaka")'))) row('status counts under a search (`?q=Osaka`), p95', (r) => ms(by(r, 'status counts under a search ("Osaka")')?.total.p95));
  if (runsBySide.some((r) => by(r, 'Intents page'))) row('Intents page, first byte p95 (one operator)', (r) => ms(by(r, 'Intents page')?.ttfb.p95));
  row(`${concurrency} operators' live refreshes at once (list + counts), p95`, (r) => conc(r.together));
  row(`${concurrency} operators' live refreshes at once (list only), p95`, (r) => conc(r.listOnly));
  if (runsBySide.some((r) => by(r, 'reference: /api/health'))) row('reference: `/api/health` sequential p95', (r) => ms(by(r, 'reference: /api/health')?.total.p95));
  row(`reference: ${concurrency} clients at once, \`/api/health\` twice each, p95`, (r) => conc(r.reference));
  if (metersShown) {
    row(`CPU of the primary's PostgreSQL during the ${concurrency} operators (list + counts)`, (r) => cpuText(r.together.cpu.primary, r.together.seconds));
    if (replicaShown) row(`CPU of the replica's PostgreSQL during the ${concurrency} operators (list + counts)`, (r) => cpuText(r.together.cpu.replica, r.together.seconds));
    row(`CPU of the console server during the ${concurrency} operators (list + counts)`, (r) => cpuText(r.together.cpu.server, r.together.seconds));
    row(`CPU of the primary's PostgreSQL during the ${concurrency} operators (list only)`, (r) => cpuText(r.listOnly.cpu.primary, r.listOnly.seconds));
    if (replicaShown) row(`CPU of the replica's PostgreSQL during the ${concurrency} operators (list only)`, (r) => cpuText(r.listOnly.cpu.replica, r.listOnly.seconds));
    row(`CPU of the console server during the reference (\`/api/health\`)`, (r) => cpuText(r.reference.cpu.server, r.reference.seconds));
    row(`CPU of the primary's PostgreSQL, sequential requests (all of them)`, (r) => cpuText(r.sequential.cpu.primary, r.sequential.seconds));
    if (replicaShown) row(`CPU of the replica's PostgreSQL, sequential requests (all of them)`, (r) => cpuText(r.sequential.cpu.replica, r.sequential.seconds));
  }
  row(`HTTP statuses in the ${concurrency}-operator phases (list + counts · list only · reference)`, (r) => [r.together, r.listOnly, r.reference].map((c) => c.statuses).join(' · '));
  row(`where the API's ${concurrency}-operator reads were served (\`Bridge-Read-Source\`)`, (r) => r.together.served || 'primary (no replicas configured: no header)');
  row('load average at start → end', (r) => `${loadText(r.load.start)} → ${loadText(r.load.end)}`);
  console.log(`\n(${availableParallelism()} cores)\n`);
  for (const r of runsBySide) {
    console.log(`${sideName(r.side)}:\n`);
    console.log('| request | status | served by | first byte p50 | first byte p95 | complete p50 | complete p95 | complete max | size |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const x of r.results) {
      console.log(`| ${x.name} | ${x.statuses} | ${x.served || '—'} | ${ms(x.ttfb.p50)} | ${ms(x.ttfb.p95)} | ${ms(x.total.p50)} | ${ms(x.total.p95)} | ${ms(x.total.max)} | ${(x.bytes / 1024).toFixed(0)} KiB |`);
    }
    console.log('');
  }
}

/** One side: a console server (reads on the replica when `readUrl` is given), every measurement, the server stopped. */
async function runSide(side: Side, url: string, readUrl: string | undefined, cookie: string, samples: Samples, meters: Meters): Promise<SideRun> {
  const server: NextServer = await startNext({
    port: await freePort(),
    databaseUrl: url,
    logFile: join(root, 'test-results', `measure-server-${side}.log`),
    // Empty, not inherited: the primary's side must not read from a replica this shell happens to name.
    env: { BRIDGE_ENV: 'development', DATABASE_READ_URL: readUrl ?? '' },
  });
  try {
    const m: Meters = { ...meters, serverPid: server.pid };
    const start = loadavg();
    say(`${sideName(side)}: next start on ${server.url}; ${warmup} warm-up and ${runs} measured requests each, one at a time`);
    say(`load average at start: ${loadText(start)} (${availableParallelism()} cores)`);
    const only = values.only ? new RegExp(values.only, 'i') : null;
    const plan = (await requestPlan(server.url, cookie, samples)).filter(([name]) => !only || only.test(name));
    const sequential = await metered(m, async () => {
      const results: Result[] = [];
      for (const [name, u, headers] of plan) results.push(await measure(name, u, headers));
      return results;
    });
    const { together, listOnly, reference } = await measureTogether(server.url, { cookie, accept: 'application/json' }, samples.pageSize, m);
    return { side, results: sequential.value, sequential: { cpu: sequential.cpu, seconds: sequential.seconds }, together, listOnly, reference, load: { start, end: loadavg() } };
  } finally {
    await server.stop();
  }
}

async function main() {
  const holder: { database?: EmbeddedDb } = {};
  let standby: Standby | undefined;
  try {
    const { url, intents } = await prepareDatabase(holder);
    if (withReplica) await vacuumAnalyze();
    const cookie = await viewerCookie();
    const samples = await samplesFrom(intents);
    const { disconnectDb } = await import('../lib/db/client');
    await disconnectDb();

    if (withReplica) {
      const started = performance.now();
      say('making a hot standby of the primary (a copy of its files while it runs)…');
      // The same memory as the primary's, so that both sides keep the same share of the tables in their buffers.
      standby = await startStandby(holder.database!, { slot: 'bridge_measure_replica', extraFlags: ['-c', 'shared_buffers=256MB'] });
      await standby.caughtUp();
      say(`the standby on port ${standby.port} has replayed everything (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    }

    ensureBuild(say, values['skip-build']);
    const meters: Meters = { primaryDir: holder.database?.dataDir ?? '', replicaDir: standby?.dataDir };
    const done: SideRun[] = [];
    for (const side of sides) done.push(await runSide(side, url, side === 'replica' ? standby!.url : undefined, cookie, samples, meters));
    printReport(intents, !!holder.database, done);
  } finally {
    await standby?.stop();
    await holder.database?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`[measure] ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
});
