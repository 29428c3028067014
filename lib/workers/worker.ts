import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { db, queryOnPool } from '@/lib/db/client';
import { oneLineError } from '@/lib/db/pg-capture';
import { updateIntentStatus } from '@/lib/intents/commands';
import { InvalidTransitionError } from '@/lib/intents/errors';
import { DomainError } from '@/lib/shared/errors';
import { backoffDelayMs } from '@/lib/shared/backoff';
import type { Actor } from '@/lib/shared/intent-types';
import { announceCommitted } from '@/lib/live/announce';
import { LostClaimError } from '@/lib/pipeline/errors';
import { resolveBridgeSet } from '@/lib/pipeline/bridges';
import { WORKER_RUNS } from '@/lib/pipeline/types';
import { auditReason, claimFence, runPipeline } from '@/lib/pipeline/run';
import { batchedWriter, batchLoader, type RunClose, type RunWriter } from '@/lib/pipeline/writer';
import { fireDueWaits, suspendClaim } from '@/lib/pipeline/waits';
import { attemptError } from './attempts';
import type { WorkerConfig } from './config';
import {
  claimDueIntents,
  closeRunsAndClaims,
  heartbeatClaims,
  recordRunsAndEndClaims,
  heartbeatWorker,
  registerWorker,
  rescueStaleClaims,
  settleClaims,
  type Claim,
  type ClaimEnd,
  type OpenOnClaim,
  type RunCloseAndClaimEnd,
  type Settlement,
} from './repository';
import { onWorkQueued } from './wakeup';

/**
 * A worker: claims due intents (FOR UPDATE SKIP LOCKED) sized to its free slots plus a local queue of claims
 * fetched ahead (WORKER_BATCH_SIZE), runs the pipeline on each with at most `concurrency` in flight, heartbeats its
 * claims and itself, rescues other workers' stale claims, and retries failures with exponential backoff and jitter
 * until the maximum, when the intent is FAILED with the reason. Several workers, in one process or many, share the
 * queue through Postgres alone; an idle one is woken by LISTEN/NOTIFY (wakeup.ts) and polls besides.
 *
 * The runs' records and the claims' ends are written in batches (lib/pipeline/writer.ts; settleClaims), each write
 * still conditional on its own claim token: a batch carrying a lost claim writes nothing for it and everything for
 * the others. The claim opens each run in its own statement without recording it, and a run's last step, its end and
 * its claim's end are one statement (closeRunsAndClaims; recordRunsAndEndClaims records a run nothing recorded before
 * whole): a run of one bridge costs its claim and its close.
 *
 * Stopping (SIGTERM): no new claims; the claims fetched ahead and not started are given back at once (nothing was
 * recorded for them, settleClaims); runs in flight get the grace period to finish; then
 * they are told to stop after their current bridge, and their claims are released (the attempt is not counted). A
 * claim whose run cannot even do that is left to the rescuer, like a crash.
 */
export type WorkerEvent = 'claimed' | 'completed' | 'failed' | 'retried' | 'released' | 'rescued' | 'lost' | 'suspended' | 'deadlines';

type InFlight = { claim: Claim; abort: AbortController; done: Promise<void> };

const settlementEvent: Record<Settlement['outcome'], WorkerEvent> = { completed: 'completed', failed: 'failed', retry: 'retried', release: 'released' };

export class Worker {
  readonly id = randomUUID();
  readonly name = `${hostname()}:${process.pid}:${this.id.slice(0, 8)}`;
  private readonly actor: Actor = { name: `${WORKER_RUNS.actorPrefix}${this.name}` };
  private readonly inFlight = new Map<string, InFlight>();
  /** Claimed and waiting for a free slot (the local queue). */
  private ahead: Claim[] = [];
  private readonly counts = new Map<WorkerEvent, number>();
  private state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  /** Claims that failed in a row (the database unreachable): counted so the log says when claiming works again. */
  private claimFailures = 0;
  /** Set by a wake-up that came while the claim loop was busy: its next wait returns at once. */
  private nudged = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  /** The registration start() is waiting for, if any (a stop during it waits for it too). */
  private starting: Promise<void> | undefined;
  private timers: NodeJS.Timeout[] = [];
  private unlisten: (() => Promise<void>) | undefined;
  private beating: Promise<void> = Promise.resolve();
  private readonly settler = batchLoader((items: readonly Settlement[]) => settleClaims(queryOnPool, items));
  private readonly closer = batchLoader((items: readonly RunCloseAndClaimEnd[]) => closeRunsAndClaims(queryOnPool, items));
  /** Closes runs nothing recorded yet (the bridge changed nothing until the end): each recorded whole with its claim's end. */
  private readonly recorder = batchLoader((items: readonly RunCloseAndClaimEnd[]) => recordRunsAndEndClaims(queryOnPool, items));

  constructor(
    readonly config: WorkerConfig,
    private readonly log: (line: string) => void = (line) => console.log(`[worker] ${line}`),
  ) {}

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  async start(): Promise<void> {
    if (this.state !== 'idle' || this.starting) throw new Error('a worker starts once');
    this.starting = registerWorker(db(), { id: this.id, name: this.name, host: hostname(), pid: process.pid, concurrency: this.config.concurrency });
    await this.starting;
    this.state = 'running';
    this.unlisten = onWorkQueued(() => this.nudge(), this.log);
    this.timers.push(setInterval(() => void this.heartbeat(), this.config.heartbeatMs));
    this.timers.push(setInterval(() => void this.rescue(), this.config.rescueMs));
    this.loop = this.claimLoop();
    this.log(`${this.name} started: concurrency ${this.config.concurrency}, fetched ahead ${this.config.batchSize}, lease ${this.config.leaseMs} ms, bridges ${this.config.bridges.join(' → ')}`);
  }

  /** Graceful stop: see the class comment. Resolves once the worker is deregistered. */
  async stop(): Promise<void> {
    // A stop that comes while the worker registers (a SIGTERM right after the process started) waits for the
    // registration and then stops the worker properly: returning at once would let the registration land after the
    // process is gone, and the registry would show a worker running that never will.
    await this.starting?.catch(() => undefined);
    if (this.state !== 'running') return;
    this.state = 'stopping';
    this.nudge();
    await this.loop;
    await this.unlisten?.();
    await this.giveBackAhead();
    await this.heartbeat();
    const all = () => Promise.all([...this.inFlight.values()].map((f) => f.done));
    const deadline = (ms: number) => new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref());
    if ((await Promise.race([all(), deadline(this.config.shutdownGraceMs)])) === 'timeout') {
      this.log(`grace period over: stopping ${this.inFlight.size} run(s) after their current bridge`);
      for (const f of this.inFlight.values()) f.abort.abort();
      await Promise.race([all(), deadline(Math.max(1000, this.config.heartbeatMs))]);
    }
    for (const t of this.timers) clearInterval(t);
    this.state = 'stopped';
    await this.heartbeat();
    this.log(`${this.name} stopped${this.inFlight.size ? ` (${this.inFlight.size} claim(s) left to the rescuer)` : ''}`);
  }

  private count(event: WorkerEvent, n = 1): void {
    this.counts.set(event, (this.counts.get(event) ?? 0) + n);
  }

  private nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  /** Waits for `ms`, a wake-up (new work, a free slot, stopping) or returns at once when one came meanwhile. */
  private sleep(ms: number): Promise<void> {
    if (this.nudged) {
      this.nudged = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        this.nudged = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private async claimLoop(): Promise<void> {
    const { concurrency, batchSize, pollMs } = this.config;
    while (this.state === 'running') {
      const room = concurrency + batchSize - this.inFlight.size - this.ahead.length;
      // Fewer, fuller claims: wait for a batch's worth of room unless the local queue has run dry.
      if (room <= 0 || (this.ahead.length > 0 && room < Math.ceil(batchSize / 2))) {
        await this.sleep(pollMs);
        continue;
      }
      let claims: Claim[] = [];
      try {
        const open = this.openOnClaim();
        claims = await claimDueIntents(queryOnPool, { workerName: this.name, limit: room, leaseMs: this.config.leaseMs, maxAttempts: this.config.maxAttempts, open });
        // The console shows a claimed intent's run as running from its claim (selectRuns).
        if (open && claims.length) announceCommitted();
        // Said once, so that a log whose last line is a failure does not read as stuck.
        if (this.claimFailures > 0) this.log(`claiming works again, after ${this.claimFailures} failed attempt${this.claimFailures === 1 ? '' : 's'}`);
        this.claimFailures = 0;
      } catch (err) {
        this.claimFailures++;
        // The first failure of a run of them, then every tenth: a database down for minutes does not flood the log.
        if (this.claimFailures === 1 || this.claimFailures % 10 === 0) this.log(`claiming failed (will try again): ${oneLineError(err)}`);
      }
      if (claims.length) this.count('claimed', claims.length);
      this.ahead.push(...claims);
      this.fill();
      // A full claim means more may be due: claim again at once; otherwise wait for new work, a free slot or the poll.
      if (claims.length < room && this.state === 'running') await this.sleep(pollMs);
    }
  }

  /**
   * What the claim opens for each intent: the run and the first bridge's step. Without a bridge set it can resolve
   * (an unknown bridge), the claim opens nothing and the run says why it cannot start.
   */
  private openOnClaim(): OpenOnClaim | undefined {
    let first;
    try {
      [first] = resolveBridgeSet(this.config.bridges);
    } catch {
      return undefined;
    }
    return first && { mode: WORKER_RUNS.mode, door: WORKER_RUNS.door, actor: this.actor.name, bridge: first.name, accepts: first.accepts, record: this.config.bridges.length > 1 };
  }

  /** Starts claims from the local queue while slots are free. */
  private fill(): void {
    while (this.inFlight.size < this.config.concurrency && this.ahead.length > 0 && this.state === 'running') this.launch(this.ahead.shift()!);
  }

  private async giveBackAhead(): Promise<void> {
    const claims = this.ahead;
    this.ahead = [];
    if (claims.length === 0) return;
    try {
      const written = await settleClaims(queryOnPool, claims.map((c) => ({ intentId: c.intentId, claimToken: c.claimToken, outcome: 'release' as const, delayMs: 0, reason: 'released by a stopping worker' })));
      this.count('released', written.filter(Boolean).length);
      this.count('lost', written.filter((w) => !w).length);
      announceCommitted({ workQueued: true });
    } catch (err) {
      this.log(`giving back ${claims.length} claim(s) fetched ahead failed (the rescuer will): ${oneLineError(err)}`);
    }
  }

  private launch(claim: Claim): void {
    const abort = new AbortController();
    const done = this.process(claim, abort.signal)
      .catch((err) => this.log(`claim ${claim.claimToken} on ${claim.intentId}: ${err instanceof Error ? err.stack : err}`))
      .finally(() => {
        this.inFlight.delete(claim.claimToken);
        this.fill();
        this.nudge();
      });
    this.inFlight.set(claim.claimToken, { claim, abort, done });
  }

  private retryDelayMs(attempt: number): number {
    return backoffDelayMs(attempt, { factor: 2, ...this.config.retry });
  }

  /** Ends the claim (batched with the other claims ending now); a refused write means the claim was lost. */
  private async settle(settlement: Settlement): Promise<void> {
    const written = await this.settler.load(settlement);
    const event = settlementEvent[settlement.outcome];
    this.count(written ? event : 'lost');
    if (!written) this.log(`claim ${settlement.claimToken} on ${settlement.intentId} was lost before it could be settled (${event})`);
    else if (settlement.outcome === 'release') announceCommitted({ workQueued: true });
  }

  /** One claim, start to end. Every write names the claim token; a refused write means the claim was lost. */
  async process(claim: Claim, signal: AbortSignal): Promise<void> {
    const ref = { intentId: claim.intentId, claimToken: claim.claimToken };

    if (claim.exhausted) {
      const reason = `gave up after ${claim.maxAttempts} attempts: ${claim.lastError ?? 'no error recorded'}`;
      await this.failIntent(claim, reason);
      return this.settle({ ...ref, outcome: 'failed', error: reason });
    }

    const lastAttempt = claim.attempt >= claim.maxAttempts;
    try {
      // The run's close ends the claim in the same statement; what it chose is counted once the run returns.
      let ended: Settlement['outcome'] | undefined;
      // A run that stopped at a wait is closed alone; its claim is then given back to wait (suspend), not ended.
      let suspends = false;
      const writer: RunWriter = {
        ...batchedWriter(),
        closeRun: async (item) => {
          if (item.status === 'waiting') {
            const closed = await batchedWriter().closeRun(item);
            suspends = closed !== null;
            return closed;
          }
          const close = { ...item, claimToken: claim.claimToken, claimEnd: this.claimEnd(claim, item) };
          const closed = await (item.opening && item.stepEnd ? this.recorder : this.closer).load(close);
          ended = closed?.outcome;
          return closed;
        },
      };
      await runPipeline({ id: claim.intentId, mode: WORKER_RUNS.mode }, this.actor, {
        door: WORKER_RUNS.door,
        bridges: this.config.bridges,
        claimToken: claim.claimToken,
        failIntentOnFailure: lastAttempt,
        signal,
        opened: claim.opened,
        writer,
      });
      if (suspends) return this.suspend(ref);
      if (ended) {
        this.count(settlementEvent[ended]);
        if (ended === 'release') announceCommitted({ workQueued: true });
      }
    } catch (err) {
      if (err instanceof LostClaimError) {
        this.count('lost');
        return;
      }
      if (err instanceof InvalidTransitionError) {
        // The intent reached COMPLETED or FAILED by another door between the claim and the run.
        const from = (err.details as { from?: string } | undefined)?.from;
        return this.settle({ ...ref, outcome: from === 'COMPLETED' ? 'completed' : 'failed', error: null });
      }
      const message = err instanceof DomainError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
      const error = attemptError(claim.attempt, claim.maxAttempts, message);
      if (lastAttempt) {
        await this.failIntent(claim, error);
        return this.settle({ ...ref, outcome: 'failed', error });
      }
      return this.settle({ ...ref, outcome: 'retry', delayMs: this.retryDelayMs(claim.attempt), error });
    }
  }

  /**
   * How the run's close ends the claim: a stopping worker's interrupted run gives it back (the attempt not counted), a
   * failed run is retried after the backoff, any other is completed — and the close itself ends it as failed when
   * the run leaves the intent FAILED (closeRunsAndClaims).
   */
  private claimEnd(claim: Claim, run: RunClose): ClaimEnd {
    const error = attemptError(claim.attempt, claim.maxAttempts, run.error ?? 'failed');
    if (run.status === 'interrupted') return { outcome: 'release', delayMs: 0, error: 'released by a stopping worker', failError: error };
    if (run.status === 'failed') return { outcome: 'retry', delayMs: this.retryDelayMs(claim.attempt), error, failError: error };
    return { outcome: 'completed', delayMs: 0, error: null, failError: error };
  }

  /**
   * The run stopped at a wait: the claim is given back (the attempt not counted) and the work row waits, holding no
   * lease, until the wait is decided (lib/pipeline/waits.ts).
   */
  private async suspend(ref: { intentId: string; claimToken: string }): Promise<void> {
    const { settled } = await suspendClaim(queryOnPool, ref);
    this.count(settled ? 'suspended' : 'lost');
    if (!settled) this.log(`claim ${ref.claimToken} on ${ref.intentId} was lost before it could wait`);
  }

  /**
   * After the maximum: the intent is FAILED through the engine (the reason is on the work row and in the audit),
   * fenced by the claim like the run's own writes, so a claim rescued meanwhile fails nothing.
   */
  private async failIntent(claim: Claim, reason: string): Promise<void> {
    const intentId = claim.intentId;
    try {
      await updateIntentStatus({ id: intentId, status: 'FAILED', reason: auditReason(reason) }, this.actor, { fencing: claimFence(intentId, claim.claimToken) });
    } catch (err) {
      this.log(`could not mark ${intentId} FAILED (${reason}): ${oneLineError(err)}`);
    }
  }

  /**
   * One heartbeat at a time: a stopping worker's last one (state `stopped`) must not be overtaken by an earlier one
   * still in flight, which would leave the registry saying `stopping`.
   */
  private heartbeat(): Promise<void> {
    this.beating = this.beating.then(() => this.beat());
    return this.beating;
  }

  private async beat(): Promise<void> {
    try {
      const tokens = [...this.inFlight.keys(), ...this.ahead.map((c) => c.claimToken)];
      const held = new Set(await heartbeatClaims(queryOnPool, { claimTokens: tokens, leaseMs: this.config.leaseMs }));
      for (const token of tokens) {
        // Rescued or released under us: stop at the next bridge (its writes would be refused anyway).
        if (!held.has(token)) this.inFlight.get(token)?.abort.abort();
      }
      // Only the claims asked about: the claim loop may have fetched more meanwhile.
      const asked = new Set(tokens);
      const lost = this.ahead.filter((c) => asked.has(c.claimToken) && !held.has(c.claimToken));
      if (lost.length) {
        this.ahead = this.ahead.filter((c) => !lost.includes(c));
        this.count('lost', lost.length);
      }
      const events = [...this.counts.entries()].filter(([, n]) => n > 0);
      this.counts.clear();
      await heartbeatWorker(queryOnPool, {
        id: this.id,
        state: this.state === 'stopped' ? 'stopped' : this.state === 'stopping' ? 'stopping' : 'running',
        inFlight: this.inFlight.size,
        events: events.map(([e]) => e),
        counts: events.map(([, n]) => n),
      }).catch((err) => {
        for (const [e, n] of events) this.count(e, n);
        throw err;
      });
    } catch (err) {
      this.log(`heartbeat failed (will try again): ${oneLineError(err)}`);
    }
  }

  /**
   * Rescues any worker's stale claims (all workers do it; the statement's SKIP LOCKED keeps them apart), and fires the
   * waits whose deadline passed, by the database's clock.
   */
  async rescue(): Promise<number> {
    try {
      const fired = await fireDueWaits(queryOnPool, { actor: this.actor.name, limit: 1000 });
      if (fired.length) {
        this.count('deadlines', fired.length);
        this.log(`fired ${fired.length} wait deadline(s): ${fired.map((f) => `${f.intentId} (${f.name})`).join(', ')}`);
      }
    } catch (err) {
      this.log(`firing wait deadlines failed (will try again): ${oneLineError(err)}`);
    }
    try {
      const rescued = await rescueStaleClaims(queryOnPool, { rescuer: this.actor.name, limit: 1000 });
      if (rescued.length) {
        this.count('rescued', rescued.length);
        announceCommitted();
        this.log(`rescued ${rescued.length} stale claim(s): ${rescued.map((r) => `${r.intentId} (from ${r.claimedBy})`).join(', ')}`);
      }
      return rescued.length;
    } catch (err) {
      this.log(`rescue failed (will try again): ${oneLineError(err)}`);
      return 0;
    }
  }
}
