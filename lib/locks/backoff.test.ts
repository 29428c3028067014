import { describe, expect, it } from 'vitest';
import { answerOutcome, isBackingOff, LOCKS_BACKOFF, nextInterval, type RefreshOutcome } from './backoff';

describe('refresh backoff', () => {
  it('doubles under pressure or errors up to the ceiling, and stretches by half when slow', () => {
    let ms = LOCKS_BACKOFF.baseMs;
    const seen: number[] = [];
    for (let i = 0; i < 6; i++) seen.push((ms = nextInterval(ms, 'pressure', LOCKS_BACKOFF)));
    expect(seen).toEqual([4000, 8000, 16000, 30000, 30000, 30000]);
    expect(nextInterval(2000, 'slow', LOCKS_BACKOFF)).toBe(3000);
    expect(nextInterval(2000, 'error', LOCKS_BACKOFF)).toBe(4000);
  });

  it('recovers step by step, never below the base', () => {
    expect(nextInterval(30000, 'ok', LOCKS_BACKOFF)).toBe(15000);
    expect(nextInterval(3000, 'ok', LOCKS_BACKOFF)).toBe(2000);
    expect(nextInterval(2000, 'ok', LOCKS_BACKOFF)).toBe(2000);
    expect(nextInterval(100, 'ok', LOCKS_BACKOFF)).toBe(2000);
    expect(isBackingOff(2000, LOCKS_BACKOFF)).toBe(false);
    expect(isBackingOff(4000, LOCKS_BACKOFF)).toBe(true);
  });

  it('does not call one slow answer (a cold first connection) slow: only two in a row', () => {
    const run = (slowness: boolean[]) => {
      let streak = 0;
      const outcomes: RefreshOutcome[] = [];
      for (const slow of slowness) {
        const next = answerOutcome(slow, streak);
        streak = next.slowInARow;
        outcomes.push(next.outcome);
      }
      return outcomes;
    };
    // The idle database of the walkthrough: 331 ms first, then 17–37 ms.
    expect(run([true, false, false, false])).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(run([true, false, true, false])).toEqual(['ok', 'ok', 'ok', 'ok']);
    // A database that stays slow is still backed off from, from the second slow answer on, and recovers after.
    expect(run([true, true, true, false])).toEqual(['ok', 'slow', 'slow', 'ok']);
    expect(run([false, true, true])).toEqual(['ok', 'ok', 'slow']);
  });
});
