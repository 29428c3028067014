/**
 * `npm run measure:lock-sampler [-- --waiters 20 --ticks 200]`: what one tick of the lock history's sampler costs,
 * with `--waiters` sessions queued behind one held row (the graph read and the episode writes), and with nobody
 * waiting (the idle look). Against BENCH_DATABASE_URL / DATABASE_URL, or a throw-away embedded PostgreSQL. Prints
 * p50 / p95 / max of the tick's own time; figures go in a dated record in docs/bench/.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { scriptDatabase } from './replay-db';

const say = (line: string) => process.stderr.write(`[lock-sampler] ${line}\n`);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

async function main() {
  const { values } = parseArgs({ options: { waiters: { type: 'string', default: '20' }, ticks: { type: 'string', default: '200' } } });
  const waiters = Number(values.waiters);
  const ticks = Number(values.ticks);
  const { embedded, url } = await scriptDatabase(process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL, say);
  const { LockSampler, samplerConfigFromEnv } = await import('../lib/locks/history/sampler');
  const sessions: pg.Client[] = [];
  const open = async (name: string) => {
    const c = new pg.Client({ connectionString: url, application_name: name });
    c.on('error', () => undefined);
    await c.connect();
    sessions.push(c);
    return c;
  };
  const sampler = new LockSampler(samplerConfigFromEnv(), url, say);
  try {
    const admin = await open('measure-admin');
    const { rows } = await admin.query<{ id: string }>(`INSERT INTO intents (id, payload, source) VALUES (gen_random_uuid(), '{}', 'measure') RETURNING id::text AS id`);
    const holder = await open('measure-holder');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [rows[0].id]);
    const queued: Promise<unknown>[] = [];
    for (let i = 0; i < waiters; i++) queued.push((await open(`measure-waiter-${i}`)).query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [rows[0].id]).catch(() => undefined));
    for (;;) {
      const { rows: w } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name LIKE 'measure-waiter-%'`);
      if (w[0].n >= waiters) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const sampling: number[] = [];
    let refused = 0;
    for (let i = 0; i < ticks; i++) {
      // A tick the database refuses (the sampler's own 1 s statement timeout) is counted, as the timer would back off.
      const t = await sampler.tick().catch((err: unknown) => (refused === 0 && say(`first refusal: ${err instanceof Error ? err.message.split("\n").slice(-1)[0] : String(err)}`), null));
      if (!t) refused++;
      else if (t.sampled) sampling.push(t.tookMs);
    }
    await holder.query('ROLLBACK');
    await Promise.all(queued);
    await sampler.tick(); // closes the episode
    const idle: number[] = [];
    for (let i = 0; i < ticks; i++) idle.push((await sampler.tick()).tookMs);
    const line = (name: string, v: number[]) => `${name}: ${v.length} ticks, p50 ${percentile(v, 50)} ms, p95 ${percentile(v, 95)} ms, max ${Math.max(...v)} ms`;
    console.log(`${line(`sampling with ${waiters} waiting`, sampling)}, ${refused} refused by its own timeouts`);
    console.log(line('idle look', idle));
  } finally {
    await sampler.stop();
    for (const c of sessions) await c.end().catch(() => undefined);
    const { disconnectDb } = await import('../lib/db/client');
    await disconnectDb().catch(() => undefined);
    await embedded?.stop();
  }
}

main().catch((err) => {
  console.error('[lock-sampler] failed:', err);
  process.exit(2);
});
