import { describe, expect, it } from 'vitest';
import {
  byDimension,
  counterDelta,
  formatMs,
  formatPercentile,
  NOT_RECORDED,
  outcomeTimeline,
  percentile,
  percentilesByOperation,
  percentileTimeline,
  totals,
  windowBuckets,
  type OutcomeRow,
} from './series';

const now = new Date('2026-03-01T12:34:56.000Z');

describe('windowBuckets', () => {
  it('aligns buckets to their size, the last one holding now', () => {
    const w = windowBuckets('15m', now);
    expect(w.starts).toHaveLength(15);
    expect(w.starts[14].toISOString()).toBe('2026-03-01T12:34:00.000Z');
    expect(w.from.toISOString()).toBe('2026-03-01T12:20:00.000Z');
    expect(w.to.toISOString()).toBe('2026-03-01T12:35:00.000Z');
    const day = windowBuckets('24h', now);
    expect(day.starts).toHaveLength(96);
    expect(day.bucketSeconds).toBe(900);
    expect(day.starts[95].toISOString()).toBe('2026-03-01T12:30:00.000Z');
    expect(day.from.toISOString()).toBe('2026-02-28T12:45:00.000Z');
  });
});

describe('outcome series', () => {
  const rows: OutcomeRow[] = [
    { bucket: '2026-03-01T12:30:00.000Z', operation: 'reevaluate', transition: '', outcome: 'version_conflict', count: 3n },
    { bucket: '2026-03-01T12:30:00.000Z', operation: 'reevaluate', transition: '', outcome: 'stale_expected_version', count: 1n },
    { bucket: '2026-03-01T12:30:00.000Z', operation: 'reevaluate', transition: '', outcome: 'retry', count: 3 },
    { bucket: new Date('2026-03-01T12:34:00.000Z'), operation: 'update_status', transition: '', outcome: 'lock_timeout', count: 2 },
    { bucket: '2026-03-01T12:34:00.000Z', operation: 'update_status', transition: '', outcome: 'deadlock_detected', count: 1 },
    { bucket: '2026-03-01T12:34:00.000Z', operation: 'update_status', transition: '', outcome: 'deadlock_retried', count: 1 },
    { bucket: '2026-03-01T12:34:00.000Z', operation: 'update_status', transition: 'RECEIVED->NORMALIZED', outcome: 'success', count: 7 },
    { bucket: '2026-03-01T12:34:00.000Z', operation: 'update_status', transition: '', outcome: 'already_applied', count: 4 },
    // Outside the 15 min window: ignored by the timeline.
    { bucket: '2026-03-01T11:00:00.000Z', operation: 'update_status', transition: '', outcome: 'lock_timeout', count: 100 },
  ];

  it('zero-fills every bucket and groups outcomes into the charted series', () => {
    const t = outcomeTimeline(rows, '15m', now);
    expect(t).toHaveLength(15);
    expect(t[10]).toEqual({ t: '2026-03-01T12:30:00.000Z', conflicts: 4, deadlocks: 0, lockTimeouts: 0, retries: 3, alreadyApplied: 0 });
    expect(t[14]).toEqual({ t: '2026-03-01T12:34:00.000Z', conflicts: 0, deadlocks: 1, lockTimeouts: 2, retries: 1, alreadyApplied: 4 });
    expect(t[0]).toMatchObject({ conflicts: 0, deadlocks: 0, lockTimeouts: 0, retries: 0, alreadyApplied: 0 });
  });

  it('totals per operation and per transition, most contention first', () => {
    const ops = byDimension(rows, 'operation');
    expect(ops.map((o) => o.name)).toEqual(['Status change', 'Correction']);
    expect(ops[0]).toMatchObject({ key: 'update_status', lockTimeouts: 102, deadlocks: 1, retries: 1, alreadyApplied: 4, success: 7, total: 108 });
    const transitions = byDimension(rows, 'transition');
    expect(transitions.map((o) => o.name)).toEqual([NOT_RECORDED, 'RECEIVED → NORMALIZED']);
    expect(transitions[1]).toMatchObject({ key: 'RECEIVED->NORMALIZED', success: 7, total: 0 });
    expect(totals(rows)).toEqual({ conflicts: 4, deadlocks: 1, lockTimeouts: 102, retries: 4, alreadyApplied: 4 });
  });
});

describe('percentile from histogram buckets', () => {
  it('interpolates inside the bucket the rank falls in (lower edge 0 for the first)', () => {
    // 10 samples ≤ 1 ms, 10 in (1, 2], 80 in (5, 10] — empty buckets need not be listed.
    const buckets = [{ leMs: 1, count: 10 }, { leMs: 2, count: 10 }, { leMs: 10, count: 80 }];
    expect(percentile(buckets, 0.05)).toEqual({ ms: 0.5, overflow: false });
    expect(percentile(buckets, 0.1)).toEqual({ ms: 1, overflow: false });
    expect(percentile(buckets, 0.15)).toEqual({ ms: 1.5, overflow: false });
    // rank 60: 40 of the 80 in (2, 10] → 2 + 8 × 0.5.
    expect(percentile(buckets, 0.6)).toEqual({ ms: 6, overflow: false });
    expect(percentile(buckets, 1)).toEqual({ ms: 10, overflow: false });
  });

  it('merges duplicate bounds (several minutes), reports overflow, and is null without samples', () => {
    expect(percentile([{ leMs: 100, count: 1 }, { leMs: 100, count: 1 }, { leMs: 50, count: 2 }], 0.5)).toEqual({ ms: 50, overflow: false });
    const slow = [{ leMs: 10, count: 90 }, { leMs: 10000, count: 5 }, { leMs: -1, count: 5 }];
    expect(percentile(slow, 0.99)).toEqual({ ms: 10000, overflow: true });
    expect(percentile(slow, 0.95)).toEqual({ ms: 10000, overflow: false });
    expect(percentile([], 0.5)).toBeNull();
    expect(percentile([{ leMs: 5, count: 0 }], 0.5)).toBeNull();
    expect(() => percentile([], 0)).toThrow(RangeError);
  });

  it('makes p50/p95/p99 per bucket and per operation', () => {
    const waits = [
      { bucket: '2026-03-01T12:34:00.000Z', operation: 'update_status', leMs: 5, count: 99n },
      { bucket: '2026-03-01T12:34:00.000Z', operation: 'update_status', leMs: -1, count: 1n },
      { bucket: '2026-03-01T12:33:00.000Z', operation: 'reevaluate', leMs: 1, count: 2 },
    ];
    const t = percentileTimeline(waits, [], '15m', now, 10000);
    expect(t).toHaveLength(15);
    expect(t[0]).toMatchObject({ p50: null, p95: null, p99: null, samples: 0 });
    expect(t[13]).toMatchObject({ p50: 0.5, p99: 1, samples: 2, overflow: false });
    // 99 samples in (0, 5] and one above 10 s: p50 = 5 × 50/99, p95 = 5 × 95/99, p99 = 5.
    expect(t[14]).toMatchObject({ p50: 2.5, p95: 4.8, p99: 5, samples: 100, overflow: false });
    const ops = percentilesByOperation(waits, [], 10000);
    expect(ops.map((o) => [o.operation, o.samples])).toEqual([['update_status', 100], ['reevaluate', 2]]);
  });

  it('counts lock timeouts as waits of at least the timeout', () => {
    // 90 acquired within (2, 10] ms, 10 ran out after 5 s: p50 is an acquired wait, p95 and p99 are the timeouts.
    const acquired = [{ leMs: 10, count: 90 }];
    const timedOut = [{ ms: 5000, count: 10 }];
    expect(percentile(acquired, 0.5, timedOut, 10000)).toEqual({ ms: 50 / 90 * 10, overflow: false });
    expect(percentile(acquired, 0.95, timedOut, 10000)).toEqual({ ms: 5000, overflow: false, atLeast: true });
    expect(percentile(acquired, 0.99, timedOut, 10000)).toEqual({ ms: 5000, overflow: false, atLeast: true });
    // Without the timeouts the same waits would say p99 = 10 ms: the slowest callers would vanish.
    expect(percentile(acquired, 0.99)).toEqual({ ms: 9.9, overflow: false });
    // Only timeouts: every quantile is "at least" the timeout.
    expect(percentile([], 0.5, timedOut)).toEqual({ ms: 5000, overflow: false, atLeast: true });
  });

  it('places a timeout inside the bucket it falls in: shorter acquired waits before it, longer ones after', () => {
    // One wait up to 2.5 s, 10 in (2.5 s, 5 s] spread evenly, one timeout of 3 s: 1 + 2 acquired waits lie below it.
    const buckets = [{ leMs: 2500, count: 1 }, { leMs: 5000, count: 10 }];
    expect(percentile(buckets, 3 / 12, [{ ms: 3000, count: 1 }])).toEqual({ ms: 3000, overflow: false });
    expect(percentile(buckets, 4 / 12, [{ ms: 3000, count: 1 }])).toEqual({ ms: 3000, overflow: false, atLeast: true });
    expect(percentile(buckets, 5 / 12, [{ ms: 3000, count: 1 }])!.ms).toBeCloseTo(3250);
    // Above the histogram's last bound come the timeouts up to it, then the overflow bucket.
    const slow = [{ leMs: 10, count: 1 }, { leMs: -1, count: 1 }];
    expect(percentile(slow, 2 / 3, [{ ms: 5000, count: 1 }], 10000)).toEqual({ ms: 5000, overflow: false, atLeast: true });
    expect(percentile(slow, 1, [{ ms: 5000, count: 1 }], 10000)).toEqual({ ms: 10000, overflow: true });
  });

  it('marks the percentiles that are timeouts, per minute and per operation', () => {
    const waits = [{ bucket: '2026-03-01T12:34:00.000Z', operation: 'update_status', leMs: 5, count: 9 }];
    const timeouts = [
      { bucket: '2026-03-01T12:34:00.000Z', operation: 'update_status', timeoutMs: 5000, count: 1n },
      { bucket: '2026-03-01T12:30:00.000Z', operation: 'bulk_update_status', timeoutMs: 200, count: 2 },
    ];
    const t = percentileTimeline(waits, timeouts, '15m', now, 10000);
    expect(t[14]).toMatchObject({ samples: 10, timedOut: 1, p99: 5000, atLeast: { p50: false, p95: true, p99: true } });
    expect(t[10]).toMatchObject({ samples: 2, timedOut: 2, p50: 200, atLeast: { p50: true, p95: true, p99: true } });
    const ops = percentilesByOperation(waits, timeouts, 10000);
    expect(ops.map((o) => [o.operation, o.samples, o.timedOut])).toEqual([['update_status', 10, 1], ['bulk_update_status', 2, 2]]);
    expect(formatPercentile(ops[0], 'p99', 10000)).toBe('≥ 5.00 s');
    expect(formatPercentile(ops[0], 'p50', 10000)).toBe('2.8 ms');
    expect(formatPercentile({ ...ops[0], p50: null }, 'p50', 10000)).toBe('—');
  });

  it('formats durations for people', () => {
    expect(formatMs(null)).toBe('—');
    expect(formatMs(4.5)).toBe('4.5 ms');
    expect(formatMs(12)).toBe('12 ms');
    expect(formatMs(1500)).toBe('1.50 s');
    expect(formatMs(10000, true)).toBe('> 10 s');
  });
});

describe('counterDelta', () => {
  it('counts growth since the first sample in the window, from zero after a stats reset', () => {
    const samples = [{ at: 100, value: 5 }, { at: 200, value: 7 }, { at: 300, value: 9 }];
    expect(counterDelta(samples, 150, { at: 400, value: 12 })).toEqual({ since: new Date(200).toISOString(), count: 5 });
    expect(counterDelta(samples, 150, { at: 400, value: 2 })).toEqual({ since: new Date(200).toISOString(), count: 2 });
    expect(counterDelta(samples, 500, { at: 600, value: 12 })).toBeNull();
  });
});

describe('labels a person understands', () => {
  it('names transitions and operations without arrows of code', async () => {
    const { transitionLabel, operationLabel } = await import('./series');
    expect(transitionLabel('*->FAILED')).toBe('any → FAILED (bulk)');
    expect(transitionLabel('PROCESSED->CORRECTED')).toBe('PROCESSED → CORRECTED');
    expect(transitionLabel('')).toBe('before any transition');
    expect(operationLabel('bulk_update_status')).toBe('Bulk status change');
    expect(operationLabel('some_new_thing')).toBe('some new thing');
  });
});
