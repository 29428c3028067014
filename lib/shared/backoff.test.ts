import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '@/lib/env';
import { backoffDelayMs, sleep } from './backoff';

/** The documented retry policy (docs/LOCKING.md): base 100 ms, ×2, ±50 ms jitter, at most 2 s. */
const BRIEF: RetryPolicy = { maxAttempts: 3, baseMs: 100, factor: 2, jitterMs: 50, maxDelayMs: 2000 };
// random() = 0.5 → no jitter; 0 → −jitter; just below 1 → +jitter.
const MID = () => 0.5;
const LOW = () => 0;
const HIGH = () => 0.999999;

describe('backoffDelayMs', () => {
  it('doubles from the base without jitter: 100, 200, 400, 800, 1600', () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, BRIEF, MID))).toEqual([100, 200, 400, 800, 1600]);
  });

  it('adds up to ±50 ms of jitter', () => {
    expect(backoffDelayMs(1, BRIEF, LOW)).toBe(50);
    expect(backoffDelayMs(1, BRIEF, HIGH)).toBe(150);
    expect(backoffDelayMs(2, BRIEF, LOW)).toBe(150);
    expect(backoffDelayMs(2, BRIEF, HIGH)).toBe(250);
  });

  it('stays within [base×2^(n-1) − 50, base×2^(n-1) + 50] for random jitter', () => {
    for (let i = 0; i < 500; i++) {
      const n = 1 + (i % 4);
      const d = backoffDelayMs(n, BRIEF);
      const centre = 100 * 2 ** (n - 1);
      expect(d).toBeGreaterThanOrEqual(centre - 50);
      expect(d).toBeLessThanOrEqual(centre + 50);
    }
  });

  it('is capped at 2 s, jitter included', () => {
    expect(backoffDelayMs(6, BRIEF, MID)).toBe(2000);
    expect(backoffDelayMs(6, BRIEF, HIGH)).toBe(2000);
    expect(backoffDelayMs(30, BRIEF, LOW)).toBe(2000);
  });

  it('never goes below zero', () => {
    expect(backoffDelayMs(1, { ...BRIEF, baseMs: 10, jitterMs: 50 }, LOW)).toBe(0);
    expect(backoffDelayMs(1, { ...BRIEF, baseMs: 0, jitterMs: 0 }, MID)).toBe(0);
  });

  it('treats retry 0 or below like the first retry', () => {
    expect(backoffDelayMs(0, BRIEF, MID)).toBe(100);
  });

  it('follows another policy: base 10, ×3', () => {
    const p: RetryPolicy = { maxAttempts: 5, baseMs: 10, factor: 3, jitterMs: 0, maxDelayMs: 100 };
    expect([1, 2, 3, 4].map((n) => backoffDelayMs(n, p, MID))).toEqual([10, 30, 90, 100]);
  });

  it('returns whole milliseconds', () => {
    expect(Number.isInteger(backoffDelayMs(1, BRIEF, () => 0.123456))).toBe(true);
  });
});

describe('sleep', () => {
  it('resolves after the timer fires', async () => {
    let done = false;
    const p = sleep(1).then(() => (done = true));
    expect(done).toBe(false);
    await p;
    expect(done).toBe(true);
  });
});
