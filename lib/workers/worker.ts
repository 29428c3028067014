import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { db } from '@/lib/db/client';
import { oneLineError } from '@/lib/db/pg-capture';
import { updateIntentStatus } from '@/lib/intents/commands';
import { DomainError, InvalidTransitionError, LockTimeoutError } from '@/lib/intents/errors';
import { backoffDelayMs } from '@/lib/shared/backoff';
import type { Actor } from '@/lib/intents/types';
import { announceCommitted } from '@/lib/live/announce';
import { LostClaimError } from '@/lib/pipeline/errors';
import { auditReason, claimFence, runPipeline } from '@/lib/pipeline/run';
import type { WorkerConfig } from './config';
import { claimDueIntents, finishClaim, heartbeatClaims, heartbeatWorker, registerWorker, releaseClaim, rescueStaleClaims, scheduleRetry, type Claim } from './repository';

/**
 * A worker: claims due intents in batches (FOR UPDATE SKIP LOCKED), runs the pipeline on each with at most
 * `concurrency` in flight, heartbeats its claims and itself, rescues other workers' stale claims, and retries
 * failures with exponential backoff and jitter until the maximum, when the intent is FAILED with the reason.
 * Several workers, in one process or many, share the queue through Postgres alone.
 *
 * Stopping (SIGTERM): no new claims; runs in flight get the grace period to finish; then they are told to stop
 * after their current bridge, and their claims are released (the attempt is not counted). A claim whose run cannot
 * even do that is left to the rescuer, like a crash.
 */
export type WorkerEvent = 'claimed' | 'completed' | 'failed' | 'retried' | 'released' | 'rescued' | 'lost';

type InFlight = { claim: Claim; abort: AbortController; done: Promise<void> };

/** How long a claim whose intent another execution holds waits before it is claimable again. */
const BUSY_RETRY_MS = 1000;

export class Worker {
  readonly id = randomUUID();
  readonly name = `${hostname()}:${process.pid}:${this.id.slice(0, 8)}`;
  private readonly actor: Actor = { name: `worker:${this.name}` };
  private readonly inFlight = new Map<string, InFlight>();
  private readonly counts = new Map<WorkerEvent, number>();
  private state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private timers: NodeJS.Timeout[] = [];

  constructor(
    readonly config: WorkerConfig,
    private readonly log: (line: string) => void = (line) => console.log(`[worker] ${line}`),
  ) {}

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  async start(): Promise<void> {
    if (this.state !== 'idle') throw new Error('a worker starts once');
    await registerWorker(db(), { id: this.id, name: this.name, host: hostname(), pid: process.pid, concurrency: this.config.concurrency });
    this.state = 'running';
    this.timers.push(setInterval(() => void this.heartbeat(), this.config.heartbeatMs));
    this.timers.push(setInterval(() => void this.rescue(), this.config.rescueMs));
    this.loop = this.claimLoop();
    this.log(`${this.name} started: concurrency ${this.config.concurrency}, batch ${this.config.batchSize}, lease ${this.config.leaseMs} ms, bridges ${this.config.bridges.join(' → ')}`);
  }

  /** Graceful stop: see the class comment. Resolves once the worker is deregistered. */
  async stop(): Promise<void> {
    if (this.state !== 'running') return;
    this.state = 'stopping';
    this.wake?.();
    await this.loop;
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

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async claimLoop(): Promise<void> {
    while (this.state === 'running') {
      const free = this.config.concurrency - this.inFlight.size;
      if (free <= 0) {
        await this.sleep(this.config.pollMs);
        continue;
      }
      const want = Math.min(this.config.batchSize, free);
      let claims: Claim[] = [];
      try {
        claims = await claimDueIntents(db(), { workerName: this.name, limit: want, leaseMs: this.config.leaseMs, maxAttempts: this.config.maxAttempts });
      } catch (err) {
        this.log(`claiming failed (will try again): ${oneLineError(err)}`);
      }
      if (claims.length) this.count('claimed', claims.length);
      for (const claim of claims) this.launch(claim);
      // A full batch means more may be due: claim again at once; otherwise wait for the poll or a free slot.
      if (claims.length < want && this.state === 'running') await this.sleep(this.config.pollMs);
    }
  }

  private launch(claim: Claim): void {
    const abort = new AbortController();
    const done = this.process(claim, abort.signal)
      .catch((err) => this.log(`claim ${claim.claimToken} on ${claim.intentId}: ${err instanceof Error ? err.stack : err}`))
      .finally(() => {
        this.inFlight.delete(claim.claimToken);
        this.wake?.();
      });
    this.inFlight.set(claim.claimToken, { claim, abort, done });
  }

  private retryDelayMs(attempt: number): number {
    return backoffDelayMs(attempt, { factor: 2, ...this.config.retry });
  }

  /** One claim, start to end. Every write names the claim token; a refused write means the claim was lost. */
  async process(claim: Claim, signal: AbortSignal): Promise<void> {
    const ref = { intentId: claim.intentId, claimToken: claim.claimToken };
    const settle = async (written: boolean | Date | null, event: WorkerEvent) => {
      this.count(written ? event : 'lost');
      if (!written) this.log(`claim ${claim.claimToken} on ${claim.intentId} was lost before it could be settled (${event})`);
    };

    if (claim.exhausted) {
      const reason = `gave up after ${claim.maxAttempts} attempts: ${claim.lastError ?? 'no error recorded'}`;
      await this.failIntent(claim, reason);
      return settle(await finishClaim(db(), { ...ref, state: 'failed', error: reason }), 'failed');
    }

    const lastAttempt = claim.attempt >= claim.maxAttempts;
    try {
      const { intent, run } = await runPipeline({ id: claim.intentId, mode: 'FAILFAST' }, this.actor, {
        door: 'worker',
        bridges: this.config.bridges,
        claimToken: claim.claimToken,
        failIntentOnFailure: lastAttempt,
        signal,
      });
      if (run.status === 'interrupted') return settle(await releaseClaim(db(), { ...ref, delayMs: 0, reason: 'released by a stopping worker' }), 'released');
      if (intent.status === 'FAILED') return settle(await finishClaim(db(), { ...ref, state: 'failed', error: `attempt ${claim.attempt} of ${claim.maxAttempts}: ${run.error ?? 'failed'}` }), 'failed');
      if (run.status === 'failed') {
        const error = `attempt ${claim.attempt} of ${claim.maxAttempts}: ${run.error ?? 'failed'}`;
        return settle(await scheduleRetry(db(), { ...ref, delayMs: this.retryDelayMs(claim.attempt), error }), 'retried');
      }
      return settle(await finishClaim(db(), { ...ref, state: 'completed', error: null }), 'completed');
    } catch (err) {
      if (err instanceof LostClaimError) return settle(false, 'lost');
      if (err instanceof LockTimeoutError) {
        // Someone else (an operator, through the API) is executing this intent: come back later, attempt not counted.
        return settle(await releaseClaim(db(), { ...ref, delayMs: BUSY_RETRY_MS, reason: 'another execution held the intent' }), 'released');
      }
      if (err instanceof InvalidTransitionError) {
        // The intent reached COMPLETED or FAILED by another door between the claim and the run.
        const from = (err.details as { from?: string } | undefined)?.from;
        return settle(await finishClaim(db(), { ...ref, state: from === 'COMPLETED' ? 'completed' : 'failed', error: null }), from === 'COMPLETED' ? 'completed' : 'failed');
      }
      const message = err instanceof DomainError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
      const error = `attempt ${claim.attempt} of ${claim.maxAttempts}: ${message}`;
      if (lastAttempt) {
        await this.failIntent(claim, error);
        return settle(await finishClaim(db(), { ...ref, state: 'failed', error }), 'failed');
      }
      return settle(await scheduleRetry(db(), { ...ref, delayMs: this.retryDelayMs(claim.attempt), error }), 'retried');
    }
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

  private async heartbeat(): Promise<void> {
    try {
      const tokens = [...this.inFlight.keys()];
      const held = new Set(await heartbeatClaims(db(), { claimTokens: tokens, leaseMs: this.config.leaseMs }));
      for (const token of tokens) {
        // Rescued or released under us: stop at the next bridge (its writes would be refused anyway).
        if (!held.has(token)) this.inFlight.get(token)?.abort.abort();
      }
      const events = [...this.counts.entries()].filter(([, n]) => n > 0);
      this.counts.clear();
      await heartbeatWorker(db(), {
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

  /** Rescues any worker's stale claims (all workers do it; the statement's SKIP LOCKED keeps them apart). */
  async rescue(): Promise<number> {
    try {
      const rescued = await rescueStaleClaims(db(), { rescuer: this.actor.name, limit: 1000 });
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
