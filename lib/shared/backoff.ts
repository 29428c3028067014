/** How retries space themselves out: exponential with jitter, capped. Used by every retry loop of the engine. */
export type BackoffPolicy = { baseMs: number; factor: number; jitterMs: number; maxDelayMs: number };

/** Delay before retry number `retry` (1-based): base × factor^(retry-1) ± jitter, capped at maxDelayMs. */
export function backoffDelayMs(retry: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponential = policy.baseMs * policy.factor ** Math.max(0, retry - 1);
  const jitter = (random() * 2 - 1) * policy.jitterMs;
  return Math.round(Math.min(policy.maxDelayMs, Math.max(0, exponential + jitter)));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
