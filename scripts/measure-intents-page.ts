/**
 * `npm run measure:intents-page`: how fast the Intents page answers at scale (brief §7: first byte p95 < 200 ms
 * with 100,000 intents). A measurement, not a test: it prints figures and never fails on them.
 *
 * Against a production build (`next start`) on the embedded PostgreSQL: a throw-away one seeded with
 * `--count` intents by lib/seed/large.ts (or DATABASE_URL as it is, with `--seed` to add the intents there).
 * Signed in as a viewer (a session cookie, as a browser sends it). Requests run one at a time after a warm-up:
 *   - the page:          GET /intents                      (HTML document; streamed, panels in Suspense)
 *   - the next page:     GET /intents?cursor=<page 1's>    (HTML document, as a shared link opens it)
 *   - next page, in-app: the same URL with `RSC: 1`        (what "Next page →" fetches on client navigation)
 *   - next page, JSON:   GET /api/intents?cursor=…         (what TanStack Query refetches on a live update)
 * For each: time to first byte and to the complete response (every streamed panel included), p50 / p95 / max.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { freePort, startEmbeddedPostgres, type EmbeddedDb } from '../lib/db/embedded';
import { migrate } from '../lib/db/migrate';
import { ensureBuild, root, startNext, type NextServer } from './next-server';

const say = (line: string) => console.log(`[measure] ${line}`);

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '5' },
    seed: { type: 'boolean', default: false },
    'skip-build': { type: 'boolean', default: false },
  },
});
const count = z.coerce.number().int().min(0).parse(values.count);
const runs = z.coerce.number().int().min(1).max(10_000).parse(values.runs);
const warmup = z.coerce.number().int().min(0).max(1_000).parse(values.warmup);

type Sample = { ttfb: number; total: number; bytes: number; status: number };

async function timeRequest(url: string, headers: Record<string, string>): Promise<Sample> {
  const start = performance.now();
  const res = await fetch(url, { headers, redirect: 'manual', cache: 'no-store' });
  const reader = res.body!.getReader();
  let ttfb = -1;
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (ttfb < 0) ttfb = performance.now() - start;
    if (done) break;
    bytes += value.byteLength;
  }
  return { ttfb, total: performance.now() - start, bytes, status: res.status };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function summary(samples: Sample[]) {
  const of = (pick: (s: Sample) => number) => {
    const xs = samples.map(pick).sort((a, b) => a - b);
    return { p50: percentile(xs, 50), p95: percentile(xs, 95), max: xs[xs.length - 1] };
  };
  return { ttfb: of((s) => s.ttfb), total: of((s) => s.total), bytes: samples[0].bytes };
}

async function measure(name: string, url: string, headers: Record<string, string>) {
  for (let i = 0; i < warmup; i++) await timeRequest(url, headers);
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) samples.push(await timeRequest(url, headers));
  const bad = samples.find((s) => s.status !== 200);
  if (bad) throw new Error(`${name}: ${url} answered ${bad.status}`);
  return { name, ...summary(samples) };
}

async function main() {
  let database: EmbeddedDb | undefined;
  let server: NextServer | undefined;
  try {
    let url = process.env.DATABASE_URL;
    let seed = values.seed;
    if (!url) {
      database = await startEmbeddedPostgres({ persistent: false, database: 'bridge_measure' });
      url = database.url;
      seed = true;
      say(`throw-away embedded PostgreSQL on port ${database.port}`);
    }
    process.env.DATABASE_URL = url;
    await migrate(url);
    const { db, disconnectDb } = await import('../lib/db/client');
    if (seed && count > 0) {
      const { seedLargeData } = await import('../lib/seed/large');
      say(`seeding ${count.toLocaleString('en')} intents…`);
      const r = await seedLargeData(count);
      say(`seeded in ${(r.ms / 1000).toFixed(1)} s (${r.auditEvents.toLocaleString('en')} audit events)`);
    }
    const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM intents`;
    say(`the database holds ${Number(n).toLocaleString('en')} intents`);

    // A signed-in viewer, through the same domain functions the console uses.
    const { insertUser } = await import('../lib/auth/users');
    const { createSession } = await import('../lib/auth/sessions');
    const { sessionCookieName } = await import('../lib/auth/cookies');
    const user = await insertUser({ username: `measure-${Date.now().toString(36)}`, roles: ['viewer'], password: 'measurement only, long enough', mustChangePassword: false, createdBy: 'measure' });
    const { secret } = await createSession(user.id, { userAgent: 'measure-intents-page' });
    const cookie = `${sessionCookieName(false)}=${secret}`;

    const { listIntents } = await import('../lib/intents/queries');
    const { PAGE_SIZE } = await import('../lib/console/filters');
    const first = await listIntents({ limit: PAGE_SIZE });
    if (!first.nextCursor) throw new Error('there is no second page: seed more intents');
    const cursor = encodeURIComponent(first.nextCursor);
    await disconnectDb();

    ensureBuild(say, values['skip-build']);
    server = await startNext({
      port: await freePort(),
      databaseUrl: url,
      logFile: join(root, 'test-results', 'measure-server.log'),
      env: { BRIDGE_ENV: 'development' },
    });
    say(`next start on ${server.url}; ${warmup} warm-up and ${runs} measured requests each, one at a time`);

    const html = { cookie, accept: 'text/html' };
    // An in-app navigation carries `_rsc`, a hash of its router headers; Next redirects a request without the right
    // one to the URL that has it. Ask once, then measure that URL as the browser would fetch it.
    const rscHeaders = { cookie, rsc: '1' };
    const probe = await fetch(`${server.url}/intents?cursor=${cursor}`, { headers: rscHeaders, redirect: 'manual' });
    await probe.body?.cancel();
    const rscUrl = probe.status >= 300 && probe.status < 400 ? new URL(probe.headers.get('location')!, server.url).href : `${server.url}/intents?cursor=${cursor}`;
    const results = [
      await measure('Intents page', `${server.url}/intents`, html),
      await measure('next page (link)', `${server.url}/intents?cursor=${cursor}`, html),
      await measure('next page (in-app, RSC)', rscUrl, rscHeaders),
      await measure('next page (JSON API)', `${server.url}/api/intents?limit=${PAGE_SIZE}&cursor=${cursor}`, { cookie, accept: 'application/json' }),
      await measure('status filter FAILED', `${server.url}/intents?status=FAILED`, html),
      await measure('search "Osaka"', `${server.url}/intents?q=Osaka`, html),
    ];

    const ms = (x: number) => `${x.toFixed(0)} ms`;
    console.log(`\nIntents page with ${Number(n).toLocaleString('en')} intents, next start, embedded PostgreSQL, ${runs} sequential requests after ${warmup} warm-up\n`);
    console.log('| request | first byte p50 | first byte p95 | complete p50 | complete p95 | complete max | size |');
    console.log('|---|---|---|---|---|---|---|');
    for (const r of results) {
      console.log(`| ${r.name} | ${ms(r.ttfb.p50)} | ${ms(r.ttfb.p95)} | ${ms(r.total.p50)} | ${ms(r.total.p95)} | ${ms(r.total.max)} | ${(r.bytes / 1024).toFixed(0)} KiB |`);
    }
    console.log('');
  } finally {
    await server?.stop();
    await database?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`[measure] ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
});
