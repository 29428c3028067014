/**
 * `npm run measure:intents-page [-- --preset 1m] [--count N] [--concurrency 20] [--runs 30] [--seed] [--skip-build]`:
 * how fast the Intents page and its reads answer at scale. A measurement, not a test: it prints figures and never
 * fails on them (a request that does not answer 200 is reported as such).
 *
 * Against a production build (`next start`): on a throw-away embedded PostgreSQL seeded with `--count` intents by
 * lib/seed/large.ts, or on DATABASE_URL as it is (`--seed` adds the intents there). `--preset 1m` means a million
 * intents; seeding them takes minutes, so for repeated runs seed a database once (`npm run seed:large -- --count
 * 1000000` with DATABASE_URL) and point the measurement at it. Signed in as a viewer (a session cookie, as a browser
 * sends it).
 *
 * Measured, one request at a time after a warm-up (time to first byte and to the complete response):
 *   - status counts, and status counts under a search (what the filter bar reads);
 *   - the Intents page, its next page (link, in-app RSC, JSON API), a status filter;
 *   - searches as people paste them: a full id, a short id, a source, displayed payload text, a raw JSON fragment,
 *     free text, a time range;
 * and then `--concurrency` operators refreshing at once (each fetches the list and the counts, as a page did on
 * every live change): p95 of one operator's refresh, and requests per second over the whole run.
 */
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { freePort, startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';
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
  },
});
if (values.preset && !(values.preset in PRESETS)) throw new Error(`--preset must be one of ${Object.keys(PRESETS).join(', ')}`);
const count = z.coerce.number().int().min(0).parse(values.count ?? (values.preset ? PRESETS[values.preset] : 100_000));
const runs = z.coerce.number().int().min(1).max(10_000).parse(values.runs);
const warmup = z.coerce.number().int().min(0).max(1_000).parse(values.warmup);
const concurrency = z.coerce.number().int().min(1).max(500).parse(values.concurrency);

type Sample = { ttfb: number; total: number; bytes: number; status: number };

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
  return { ttfb, total: performance.now() - start, bytes, status: res.status };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

type Stats = { p50: number; p95: number; max: number };
const stats = (xs: number[]): Stats => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p95: percentile(s, 95), max: s[s.length - 1] };
};

type Result = { name: string; ttfb: Stats; total: Stats; bytes: number; statuses: string };

async function measure(name: string, url: string, headers: Record<string, string>): Promise<Result> {
  for (let i = 0; i < warmup; i++) await timeRequest(url, headers);
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) samples.push(await timeRequest(url, headers));
  const statuses = [...new Set(samples.map((s) => s.status))].join('/');
  return { name, ttfb: stats(samples.map((s) => s.ttfb)), total: stats(samples.map((s) => s.total)), bytes: samples[0].bytes, statuses };
}

/** `n` operators at once, each refreshing `urls` in parallel, `rounds` times: one operator's refresh time, and req/s. */
async function measureConcurrent(urls: string[], headers: Record<string, string>, n: number, rounds: number) {
  const refresh = async () => {
    const start = performance.now();
    const samples = await Promise.all(urls.map((u) => timeRequest(u, headers)));
    return { ms: performance.now() - start, statuses: samples.map((s) => s.status) };
  };
  for (let i = 0; i < Math.min(warmup, 2); i++) await Promise.all(Array.from({ length: n }, refresh));
  const times: number[] = [];
  const statuses = new Set<number>();
  const started = performance.now();
  for (let r = 0; r < rounds; r++) {
    const done = await Promise.all(Array.from({ length: n }, refresh));
    for (const d of done) {
      times.push(d.ms);
      for (const s of d.statuses) statuses.add(s);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  return { refresh: stats(times), perSecond: (rounds * n * urls.length) / seconds, statuses: [...statuses].join('/') };
}

/** The database to measure on (throw-away unless DATABASE_URL names one), migrated and seeded as asked; returns its intents' count. */
async function prepareDatabase(holder: { database?: EmbeddedDb }): Promise<{ url: string; intents: number }> {
  let url = process.env.DATABASE_URL;
  let seed = values.seed;
  if (!url) {
    holder.database = await startEmbeddedPostgres({ persistent: false, database: 'bridge_measure' });
    url = holder.database.url;
    seed = true;
    say(`throw-away embedded PostgreSQL on port ${holder.database.port}`);
  }
  process.env.DATABASE_URL = url;
  await migrate(url);
  const { db } = await import('../lib/db/client');
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

type Concurrent = Awaited<ReturnType<typeof measureConcurrent>>;

/** Operators refreshing at once: list + counts, list only (counts travel in the live stream), and /api/health as the reference. */
async function measureTogether(base: string, json: Record<string, string>, pageSize: number) {
  say(`${concurrency} operators refreshing at once (list + counts each), ${runs} rounds`);
  const together = await measureConcurrent([`${base}/api/intents?limit=${pageSize}`, countsUrl(base)], json, concurrency, runs);
  say(`${concurrency} operators refreshing at once (list only: counts travel in the live stream), ${runs} rounds`);
  const listOnly = await measureConcurrent([`${base}/api/intents?limit=${pageSize}`], json, concurrency, runs);
  say(`${concurrency} clients at once on /api/health twice each (the reference), ${runs} rounds`);
  const reference = await measureConcurrent([`${base}/api/health`, `${base}/api/health`], json, concurrency, runs);
  return { together, listOnly, reference };
}

const ms = (x: number) => `${x.toFixed(0)} ms`;

function printReport(intents: number, embedded: boolean, results: Result[], { together, listOnly, reference }: { together: Concurrent; listOnly: Concurrent; reference: Concurrent }): void {
  const by = (name: string) => results.find((r) => r.name === name);
  const count = intents.toLocaleString('en');
  console.log(`\nIntents page with ${count} intents, next start, ${embedded ? 'embedded PostgreSQL' : 'given database'}, ${runs} requests after ${warmup} warm-up\n`);
  console.log(`| | ${count} intents |`);
  console.log('|---|---|');
  const c = by('status counts');
  const cq = by('status counts under a search ("Osaka")');
  const p = by('Intents page');
  if (c) console.log(`| status counts (\`/api/console/intents/counts\`), sequential p95 | ${ms(c.total.p95)} |`);
  if (cq) console.log(`| status counts under a search (\`?q=Osaka\`), p95 | ${ms(cq.total.p95)} |`);
  if (p) console.log(`| Intents page, first byte p95 (one operator) | ${ms(p.ttfb.p95)} |`);
  console.log(`| ${concurrency} operators' live refreshes at once (list + counts), p95 | ${ms(together.refresh.p95)} (${together.perSecond.toFixed(0)} req/s) |`);
  console.log(`| ${concurrency} operators' live refreshes at once (list only), p95 | ${ms(listOnly.refresh.p95)} (${listOnly.perSecond.toFixed(0)} req/s) |`);
  const h = by('reference: /api/health');
  if (h) console.log(`| reference: \`/api/health\` sequential p95 | ${ms(h.total.p95)} |`);
  console.log(`| reference: ${concurrency} clients at once, \`/api/health\` twice each, p95 | ${ms(reference.refresh.p95)} (${reference.perSecond.toFixed(0)} req/s) |`);
  console.log(`\nLoad average when done: ${loadavg().map((x) => x.toFixed(1)).join(' ')} (${availableParallelism()} cores)`);
  console.log('');
  console.log('| request | status | first byte p50 | first byte p95 | complete p50 | complete p95 | complete max | size |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(`| ${r.name} | ${r.statuses} | ${ms(r.ttfb.p50)} | ${ms(r.ttfb.p95)} | ${ms(r.total.p50)} | ${ms(r.total.p95)} | ${ms(r.total.max)} | ${(r.bytes / 1024).toFixed(0)} KiB |`);
  }
  console.log('');
}

async function main() {
  const holder: { database?: EmbeddedDb } = {};
  let server: NextServer | undefined;
  try {
    const { url, intents } = await prepareDatabase(holder);
    const cookie = await viewerCookie();
    const samples = await samplesFrom(intents);
    const { disconnectDb } = await import('../lib/db/client');
    await disconnectDb();

    ensureBuild(say, values['skip-build']);
    server = await startNext({ port: await freePort(), databaseUrl: url, logFile: join(root, 'test-results', 'measure-server.log'), env: { BRIDGE_ENV: 'development' } });
    say(`next start on ${server.url}; ${warmup} warm-up and ${runs} measured requests each, one at a time`);
    say(`load average at start: ${loadavg().map((x) => x.toFixed(1)).join(' ')} (${availableParallelism()} cores)`);

    const only = values.only ? new RegExp(values.only, 'i') : null;
    const results: Result[] = [];
    for (const [name, u, headers] of await requestPlan(server.url, cookie, samples)) if (!only || only.test(name)) results.push(await measure(name, u, headers));
    const together = await measureTogether(server.url, { cookie, accept: 'application/json' }, samples.pageSize);
    printReport(intents, !!holder.database, results, together);
  } finally {
    await server?.stop();
    await holder.database?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`[measure] ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
});
