import pg from 'pg';
import { createPrisma, directDatabaseUrl, type Db } from '@/lib/db/client';
import { pressureReason } from '@/lib/db/sqlstate';
import { env } from '@/lib/env';
import { LOCKS_BACKOFF, nextInterval, type BackoffPolicy } from '../backoff';
import { LOCK_SNAPSHOT_LIMITS, readResolvedBackends, SAMPLER_LABEL, withSnapshotTransaction } from '../queries';
import { continueEpisode, endOf, observeRoots, openEpisode, rootKeyString, type EpisodeLock, type RootObservation } from './fold';
import { addToStorm, closeEpisodes, countLockWaiters, insertEpisode, readEpisodeLocks, readOpenEpisodes, stillLeader, tryLeadership, updateEpisode } from './store';

/**
 * The lock history's sampler. Every console instance and worker process runs one; the one holding a session-level
 * advisory lock (SAMPLER_LOCK) leads, the others try to take it over every `takeoverMs`, so a dead leader (its
 * connection gone, and with it the lock) is replaced within that. The leader, on its own single connection:
 *
 * - while nothing waits, looks every `idleMs` whether anything does (one read of pg_stat_activity);
 * - while anything waits, or an episode is in progress, reads the blocking graph every `sampleMs` exactly as the
 *   Locks page does (same query, same short lock_timeout / statement_timeout), and writes episodes.
 *
 * Old episodes leave by whole days, with the rest of the partitioned history (lib/db/partitions.ts, housekeeping).
 *
 * Ticks are chained (the next is scheduled when one ends), so they never pile up; a tick the database refuses (its
 * timeouts fired, the connection broke) doubles the delay up to `backoff.maxMs`, and healthy ones bring it back.
 * Tests call `tick()` directly instead of waiting for the timer.
 */

export type SamplerConfig = {
  sampleMs: number;
  idleMs: number;
  takeoverMs: number;
  episodesPerMinute: number;
  backoff: BackoffPolicy;
};

export type TickReport = {
  role: 'leader' | 'follower';
  /** Whether the blocking graph was read (false on an idle look, or as a follower). */
  sampled: boolean;
  waiting: number;
  opened: string[];
  continued: string[];
  closed: string[];
  summarised: number;
  tookMs: number;
};


export function samplerConfigFromEnv(): SamplerConfig {
  const e = env();
  return {
    sampleMs: e.LOCK_HISTORY_SAMPLE_MS,
    idleMs: e.LOCK_HISTORY_IDLE_MS,
    takeoverMs: e.LOCK_HISTORY_TAKEOVER_MS,
    episodesPerMinute: e.LOCK_HISTORY_EPISODES_PER_MINUTE,
    backoff: { baseMs: e.LOCK_HISTORY_SAMPLE_MS, maxMs: LOCKS_BACKOFF.maxMs },
  };
}

export class LockSampler {
  private readonly pool: pg.Pool;
  private readonly prisma: Db;
  private leader: { pid: number; backendStart: string } | null = null;
  private openEpisodes = 0;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private stopped = false;
  private delayMs: number;
  private ticking: Promise<TickReport> | undefined;
  /** New root blockers written this minute (the storm budget), and roots already summarised (never opened later). */
  private budget = { minute: '', used: 0 };
  private summarised = new Set<string>();

  constructor(
    readonly config: SamplerConfig = samplerConfigFromEnv(),
    connectionString: string = directDatabaseUrl(),
    private readonly log: (line: string) => void = (line) => console.warn(`[lock-history] ${line}`),
  ) {
    // One connection of its own: the leadership is a session lock held by it, and the sampler never waits for the
    // engine's pool (nor takes from it) while the database is busiest. The Locks page's timeouts apply to every
    // statement on it, not only inside the snapshot transaction.
    this.pool = new pg.Pool({
      connectionString,
      max: 1,
      idleTimeoutMillis: 0,
      application_name: SAMPLER_LABEL,
      statement_timeout: LOCK_SNAPSHOT_LIMITS.statementTimeoutMs,
      lock_timeout: LOCK_SNAPSHOT_LIMITS.lockTimeoutMs,
      idle_in_transaction_session_timeout: LOCK_SNAPSHOT_LIMITS.transactionMs,
    });
    this.pool.on('error', (err) => this.log(`its database connection was closed: ${err.message}`));
    this.prisma = createPrisma(this.pool, { preparedStatements: false });
    this.delayMs = config.sampleMs;
  }

  get isLeader(): boolean {
    return this.leader !== null;
  }

  /** The pid of the connection holding the leadership (for tests and the Locks page's own diagnostics). */
  get leaderPid(): number | null {
    return this.leader?.pid ?? null;
  }

  /** Starts the timer: ticks chained one after another, never two at once. */
  start(): void {
    if (this.running) return;
    this.running = true;
    const loop = async () => {
      if (!this.running) return;
      let outcome: 'ok' | 'pressure' | 'error' = 'ok';
      let report: TickReport | undefined;
      try {
        report = await this.tick();
      } catch (err) {
        outcome = pressureReason(err) ? 'pressure' : 'error';
        if (outcome === 'error') this.log(`a tick failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      this.delayMs = nextInterval(this.delayMs, outcome, this.config.backoff);
      const base = !report || report.role === 'follower' ? this.config.takeoverMs : report.waiting > 0 || this.openEpisodes > 0 ? this.config.sampleMs : this.config.idleMs;
      // Backing off stretches the beat; it never shortens it.
      const next = outcome === 'ok' ? base : Math.max(base, this.delayMs);
      if (this.running) this.timer = setTimeout(loop, next);
      this.timer?.unref();
    };
    this.timer = setTimeout(loop, 0);
    this.timer.unref();
  }

  /** Stops the timer and closes the connection (which releases the leadership at once). */
  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking?.catch(() => undefined);
    this.leader = null;
    await this.prisma.$disconnect().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }

  /** One step: lead or stand by; as the leader, look or sample. Concurrent calls share the tick in flight. */
  tick(): Promise<TickReport> {
    if (this.stopped) return Promise.reject(new Error('the sampler was stopped'));
    this.ticking ??= this.runTick().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async runTick(): Promise<TickReport> {
    const started = performance.now();
    const report: TickReport = { role: 'follower', sampled: false, waiting: 0, opened: [], continued: [], closed: [], summarised: 0, tookMs: 0 };
    const done = () => ({ ...report, tookMs: Math.round(performance.now() - started) });
    if (!(await this.ensureLeadership())) return done();
    report.role = 'leader';
    try {
      report.waiting = await this.prisma.$transaction((tx) => countLockWaiters(tx));
      if (report.waiting > 0 || this.openEpisodes > 0) {
        Object.assign(report, await this.sample());
        report.sampled = true;
      }
    } catch (err) {
      // The connection may be gone, and the leadership with it: check again on the next tick.
      if (!pressureReason(err)) this.leader = null;
      throw err;
    }
    return done();
  }

  /** Still the leader on the same connection, or the leadership taken now if it is free. */
  private async ensureLeadership(): Promise<boolean> {
    try {
      if (this.leader) {
        const leader = this.leader;
        if (await this.prisma.$transaction((tx) => stillLeader(tx, leader))) return true;
        this.log('lost its connection, and the leadership with it');
        this.leader = null;
      }
      this.leader = await this.prisma.$transaction((tx) => tryLeadership(tx));
      if (this.leader) {
        // Whatever was in progress under the previous leader is continued from the database.
        this.openEpisodes = 1;
      }
      return this.leader !== null;
    } catch (err) {
      this.leader = null;
      if (pressureReason(err)) throw err;
      return false;
    }
  }

  private async sample(): Promise<Pick<TickReport, 'opened' | 'continued' | 'closed' | 'summarised'>> {
    const { now, observations, locks } = await withSnapshotTransaction(async (tx) => {
      const resolved = await readResolvedBackends(tx);
      const now = resolved.now.toISOString();
      const observations = observeRoots(resolved.backends, now);
      const rootPids = observations.map((o) => o.key.pid);
      const waiterPids = observations.flatMap((o) => o.waiters.map((w) => w.pid));
      const locks = rootPids.length ? await readEpisodeLocks(tx, rootPids, waiterPids) : [];
      return { now, observations, locks };
    }, this.prisma);

    const locksOf = (o: RootObservation): EpisodeLock[] => {
      const pids = new Set([o.key.pid, ...o.waiters.map((w) => w.pid)]);
      return locks.filter((l) => pids.has(l.pid)).map(({ pid: _pid, ...l }) => l);
    };
    const result = { opened: [] as string[], continued: [] as string[], closed: [] as string[], summarised: 0 };
    const leader = this.leader!;
    await this.prisma.$transaction(async (tx) => {
      if (!(await stillLeader(tx, leader))) throw new Error('the leadership was lost during the sample');
      const open = await readOpenEpisodes(tx);
      const openByKey = new Map(open.map((e) => [rootKeyString(e.key), e]));
      const seen = new Set<string>();
      const fresh: RootObservation[] = [];
      for (const obs of observations) {
        const key = rootKeyString(obs.key);
        seen.add(key);
        const episode = openByKey.get(key);
        if (!episode) {
          if (!this.summarised.has(key)) fresh.push(obs);
          continue;
        }
        await updateEpisode(tx, episode.id, continueEpisode(episode, obs, locksOf(obs), now), obs.intents);
        result.continued.push(episode.id);
      }
      const ends = open.filter((e) => !seen.has(rootKeyString(e.key))).map((e) => ({ id: e.id, endedAt: endOf(e.lastSeenAt, now, this.config.sampleMs) }));
      await closeEpisodes(tx, ends);
      result.closed = ends.map((e) => e.id);

      const minute = `${now.slice(0, 16)}:00.000Z`;
      if (this.budget.minute !== minute) this.budget = { minute, used: 0 };
      const room = Math.max(0, this.config.episodesPerMinute - this.budget.used);
      for (const obs of fresh.slice(0, room)) {
        const id = await insertEpisode(tx, openEpisode(obs, locksOf(obs), now), obs.intents);
        if (id) result.opened.push(id);
      }
      this.budget.used += Math.min(room, fresh.length);
      const storm = fresh.slice(room);
      if (storm.length) {
        await addToStorm(tx, minute, storm.length, Math.max(...storm.map((o) => o.waiters.length)), [...new Set(storm.flatMap((o) => o.applications))]);
        for (const obs of storm) this.summarised.add(rootKeyString(obs.key));
        result.summarised = storm.length;
      }
    });
    // Summarised roots are remembered only while they last.
    for (const key of this.summarised) if (!observations.some((o) => rootKeyString(o.key) === key)) this.summarised.delete(key);
    this.openEpisodes = result.opened.length + result.continued.length;
    return result;
  }
}

let processSampler: LockSampler | undefined;

/** The process's sampler (console server, worker), started unless LOCK_HISTORY_SAMPLER=off. */
export function startLockSampler(log?: (line: string) => void): LockSampler | undefined {
  if (env().LOCK_HISTORY_SAMPLER === 'off') return undefined;
  processSampler ??= new LockSampler(samplerConfigFromEnv(), directDatabaseUrl(), log);
  processSampler.start();
  return processSampler;
}

export async function stopLockSampler(): Promise<void> {
  const sampler = processSampler;
  processSampler = undefined;
  await sampler?.stop();
}
