import type { RetryPolicy } from '@/lib/env';

/** Delay before retry number `retry` (1-based): base × factor^(retry-1) ± jitter, capped at maxDelayMs. */
export function backoffDelayMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exponential = policy.baseMs * policy.factor ** Math.max(0, retry - 1);
  const jitter = (random() * 2 - 1) * policy.jitterMs;
  return Math.round(Math.min(policy.maxDelayMs, Math.max(0, exponential + jitter)));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
