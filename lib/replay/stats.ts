/** Latency summaries for the replay: nearest-rank percentiles over every sample (no sampling, no interpolation). */
export type LatencySummary = { count: number; min: number; mean: number; p50: number; p95: number; p99: number; max: number };

/** Nearest-rank percentile of ascending samples: the smallest sample with at least p % of the samples at or below it. */
export function percentile(sortedAsc: readonly number[], p: number): number {
  if (sortedAsc.length === 0) throw new Error('percentile of no samples');
  const rank = Math.ceil((p / 100) * sortedAsc.length);
  return sortedAsc[Math.min(sortedAsc.length, Math.max(1, rank)) - 1];
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Milliseconds in, milliseconds out (rounded to µs). Null for no samples: a scenario that measured nothing says so. */
export function summarize(samplesMs: readonly number[]): LatencySummary | null {
  if (samplesMs.length === 0) return null;
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    count: sorted.length,
    min: round(sorted[0], 3),
    mean: round(sum / sorted.length, 3),
    p50: round(percentile(sorted, 50), 3),
    p95: round(percentile(sorted, 95), 3),
    p99: round(percentile(sorted, 99), 3),
    max: round(sorted[sorted.length - 1], 3),
  };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
