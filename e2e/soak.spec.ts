import { expect, test } from '@playwright/test';
import { apiTokenFor } from './auth';
import { filler, metric, raw, type RawAnswer } from './support/raw-http';

/**
 * A soak of mixed hostile traffic against the production server: HEAD and aborted event streams, oversized chunked
 * and declared uploads, unknown methods, undecodable paths, lax numbers, NUL search text, forged server actions.
 * Afterwards the process must be back near where it started — active handles, open event streams and resident
 * memory (from /api/metrics) — and health must answer in milliseconds. No answer may be a 5xx.
 *
 * SOAK_SECONDS sets the length (default 60, so `npm test` stays reasonable; the review's few minutes: 180 or more).
 * It runs after every other browser test (its own Playwright project), so their streams do not blur the baseline.
 */
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const CONCURRENCY = 8;

test.setTimeout((SECONDS + 150) * 1000);

async function metrics(baseURL: string) {
  const text = (await raw(baseURL, { path: '/api/metrics' }))!.body;
  return {
    handles: metric(text, 'nodejs_active_handles_total'),
    streams: metric(text, 'bridge_live_streams_open'),
    rssMb: metric(text, 'process_resident_memory_bytes') / 2 ** 20,
  };
}

async function healthMs(baseURL: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const started = performance.now();
    const answer = await raw(baseURL, { path: '/api/health' });
    times.push(performance.now() - started);
    expect(answer?.status).toBe(200);
  }
  return times.sort((a, b) => a - b)[3];
}

test('HEAD on the event stream opens none, however often', async ({ baseURL }) => {
  const { authorization } = await apiTokenFor(['viewer']);
  const open = async () => metric((await raw(baseURL!, { path: '/api/metrics' }))!.body, 'bridge_live_streams_open');
  await expect.poll(open, { timeout: 15_000 }).toBe(0);
  const handles = metric((await raw(baseURL!, { path: '/api/metrics' }))!.body, 'nodejs_active_handles_total');
  for (let i = 0; i < 200; i++) expect((await raw(baseURL!, { method: 'HEAD', path: '/api/events', headers: { authorization } }))!.status).toBe(200);
  expect(await open()).toBe(0);
  expect(metric((await raw(baseURL!, { path: '/api/metrics' }))!.body, 'nodejs_active_handles_total')).toBeLessThanOrEqual(handles + 10);
});

test('mixed hostile traffic leaves no handles, streams or memory behind', async ({ baseURL }) => {
  const base = baseURL!;
  const { authorization } = await apiTokenFor(['viewer', 'operator']);
  const json = { authorization, 'content-type': 'application/json' };
  const kinds: Record<string, () => Promise<RawAnswer | null>> = {
    headEvents: () => raw(base, { method: 'HEAD', path: '/api/events', headers: { authorization } }),
    abortedStream: () => raw(base, { path: '/api/events', headers: { authorization }, abortAfterMs: Math.floor(Math.random() * 400) }),
    chunkedUpload: () => raw(base, { method: 'POST', path: '/api/intents', headers: { ...json, 'transfer-encoding': 'chunked' }, chunks: filler((2 + Math.floor(Math.random() * 6)) * 1024 * 1024) }),
    declaredUpload: () => raw(base, { method: 'POST', path: '/api/intents', headers: { ...json, 'content-length': String(600 * 1024 * 1024) }, body: '{"payload":' }),
    abortedUpload: () => raw(base, { method: 'POST', path: '/api/intents/bulk-status', headers: { ...json, 'transfer-encoding': 'chunked' }, chunks: filler(4 * 1024 * 1024), abortAfterMs: 50 }),
    trace: () => raw(base, { method: 'TRACE', path: '/api/intents' }),
    badPath: () => raw(base, { path: ['/api/intents/%FF', '/intents/%ED%A0%80', '/%C0%AF'][Math.floor(Math.random() * 3)] }),
    laxNumber: () => raw(base, { path: `/api/intents?limit=${['0x10', '%201', '1e3', '99999999999999999999'][Math.floor(Math.random() * 4)]}`, headers: { authorization } }),
    nulSearch: () => raw(base, { path: '/api/console/intents/counts?q=a%00b', headers: { authorization } }),
    forgedAction: () => raw(base, { method: 'POST', path: '/intents', headers: { 'next-action': '00'.repeat(21), origin: 'https://evil.example', cookie: 'bc_session=x' }, body: '[]' }),
  };
  const names = Object.keys(kinds);

  // Warm up every path once, then take the baseline of handles and streams.
  for (const name of names) await kinds[name]();
  await new Promise((r) => setTimeout(r, 1500));
  const baseline = await metrics(base);

  const statuses = new Map<string, Map<number | 'cut', number>>();
  let requests = 0;
  const traffic = async (seconds: number) => {
    const deadline = Date.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < deadline) {
          const name = names[Math.floor(Math.random() * names.length)];
          const answer = await kinds[name]();
          requests++;
          const byStatus = statuses.get(name) ?? new Map();
          const key = answer?.status ?? 'cut';
          byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
          statuses.set(name, byStatus);
        }
      }),
    );
  };
  // Resident memory first grows while the allocator and the heap settle at this traffic's working set (multi-MiB
  // uploads in flight), and a process rarely hands that back. So memory is judged from the end of a first stretch of
  // the same traffic (a quarter of the run, at least 30 s) onwards: what a leak adds keeps growing with the requests, a settled working set does not.
  const settling = Math.max(30, SECONDS / 4);
  await traffic(settling);
  const settled = await metrics(base);
  await traffic(Math.max(SECONDS - settling, 30));

  const fivexx = [...statuses].flatMap(([name, m]) => [...m].filter(([s]) => typeof s === 'number' && s >= 500).map(([s, n]) => `${name}: ${n}× ${s}`));
  expect(fivexx).toEqual([]);

  // Streams end with their connections; give the server a moment, then compare with the baseline.
  let after = await metrics(base);
  for (let i = 0; i < 40 && (after.streams > baseline.streams || after.handles > baseline.handles + 10); i++) {
    await new Promise((r) => setTimeout(r, 250));
    after = await metrics(base);
  }
  const health = await healthMs(base);
  const summary = { seconds: SECONDS, requests, baseline, settledRssMb: settled.rssMb, after, healthMedianMs: Math.round(health), statuses: Object.fromEntries([...statuses].map(([k, m]) => [k, Object.fromEntries(m)])) };
  console.log(`[soak] ${JSON.stringify(summary)}`);
  test.info().annotations.push({ type: 'soak', description: JSON.stringify(summary) });

  expect(after.streams).toBeLessThanOrEqual(baseline.streams);
  expect(after.handles).toBeLessThanOrEqual(baseline.handles + 10);
  // Resident memory may keep some of what the garbage collector has not returned; a leak grows with the traffic.
  expect(after.rssMb).toBeLessThan(settled.rssMb + 96);
  expect(health).toBeLessThan(250);
});
