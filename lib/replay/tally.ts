import { SQLSTATE, sqlState } from '@/lib/db/sqlstate';
import { DomainError } from '@/lib/shared/errors';
import type { OutcomeObserver } from '@/lib/intents/outcomes';
import type { OutcomeCounts } from './types';

export type CallResult<T> = { ok: true; value: T; ms: number } | { ok: false; error: unknown; code: string; ms: number };

/** The error code a caller would see: the domain error's, else what the SQLSTATE means. */
export function errorCode(err: unknown): string {
  if (err instanceof DomainError) return err.code;
  const state = sqlState(err);
  if (state === SQLSTATE.lockNotAvailable) return 'lock_timeout';
  if (state === SQLSTATE.deadlock) return 'deadlock';
  if (state === SQLSTATE.queryCanceled) return 'cancelled';
  return state ? `sqlstate_${state}` : 'error';
}

/**
 * Counts one scenario's outcomes two ways: what each call returned (timed, success or error code), and what the
 * engine recorded while the scenario ran (its observer sees the conflicts, retries and deadlocks a call absorbed
 * without failing). Calls never throw out of `call`: a scenario judges failures, it does not die of them.
 */
export class OutcomeTally {
  private calls = 0;
  private succeeded = 0;
  private alreadyApplied = 0;
  private readonly failed: Record<string, number> = {};
  private readonly failedExamples: Record<string, string> = {};
  private readonly engine: Record<string, number> = {};
  readonly latencies: number[] = [];

  readonly observer: OutcomeObserver = (operation, outcome, n) => {
    const key = `${operation}:${outcome}`;
    this.engine[key] = (this.engine[key] ?? 0) + n;
  };

  async call<T>(work: () => Promise<T>, isAlreadyApplied: (value: T) => boolean = () => false, options: { timed?: boolean } = {}): Promise<CallResult<T>> {
    this.calls++;
    const started = performance.now();
    try {
      const value = await work();
      const ms = performance.now() - started;
      this.succeeded++;
      if (isAlreadyApplied(value)) this.alreadyApplied++;
      if (options.timed !== false) this.latencies.push(ms);
      return { ok: true, value, ms };
    } catch (error) {
      const ms = performance.now() - started;
      const code = errorCode(error);
      this.failed[code] = (this.failed[code] ?? 0) + 1;
      this.failedExamples[code] ??= (error instanceof Error ? error.message : String(error)).slice(0, 500);
      if (options.timed !== false) this.latencies.push(ms);
      return { ok: false, error, code, ms };
    }
  }

  /** Engine count of `outcome`, over every operation (or one). */
  engineCount(outcome: string, operation?: string): number {
    return Object.entries(this.engine)
      .filter(([key]) => (operation ? key === `${operation}:${outcome}` : key.endsWith(`:${outcome}`)))
      .reduce((n, [, v]) => n + v, 0);
  }

  failedWith(code: string): number {
    return this.failed[code] ?? 0;
  }

  counts(): OutcomeCounts {
    return {
      calls: this.calls,
      succeeded: this.succeeded,
      alreadyApplied: this.alreadyApplied,
      conflicts: this.engineCount('version_conflict') + this.engineCount('stale_expected_version'),
      retries: this.engineCount('retry') + this.engineCount('deadlock_retried'),
      lockTimeouts: this.failedWith('lock_timeout'),
      deadlocks: this.engineCount('deadlock_detected'),
      failed: { ...this.failed },
      failedExamples: { ...this.failedExamples },
      engine: { ...this.engine },
    };
  }
}
