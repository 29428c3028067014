import { describe, expect, it } from 'vitest';
import { median, percentile, summarize } from './stats';

describe('replay statistics', () => {
  it('takes nearest-rank percentiles over every sample', () => {
    const samples = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 95)).toBe(95);
    expect(percentile(samples, 99)).toBe(99);
    expect(percentile(samples, 100)).toBe(100);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([1, 2, 3], 0)).toBe(1);
    expect(() => percentile([], 50)).toThrow();
  });

  it('summarizes unsorted samples and says so when there are none', () => {
    expect(summarize([])).toBeNull();
    const s = summarize([5, 1, 4, 2, 3])!;
    expect(s).toEqual({ count: 5, min: 1, mean: 3, p50: 3, p95: 5, p99: 5, max: 5 });
    // one slow outlier among twenty: p95 is the 19th sample, p99 the outlier
    const t = summarize([...Array.from({ length: 19 }, () => 2), 200])!;
    expect(t.p95).toBe(2);
    expect(t.p99).toBe(200);
  });

  it('takes medians of odd and even counts', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});
