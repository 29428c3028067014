/**
 * Pure functions: persisted rows → chart series for the Contention page. No database and no React here, so the
 * arithmetic (bucketing, zero-filling, percentiles from histogram buckets) is unit-tested on its own.
 */

export const WINDOWS = {
  '15m': { label: '15 min', bucketSeconds: 60, buckets: 15 },
  '1h': { label: '1 hour', bucketSeconds: 60, buckets: 60 },
  '24h': { label: '24 hours', bucketSeconds: 900, buckets: 96 },
} as const;
export type WindowKey = keyof typeof WINDOWS;
export const WINDOW_KEYS = Object.keys(WINDOWS) as WindowKey[];

export function isWindowKey(value: unknown): value is WindowKey {
  return typeof value === 'string' && value in WINDOWS;
}

/**
 * What the charts show, and which engine outcomes (lib/intents/outcomes.ts) make up each. Conflicts include the
 * refusals of a stale expectedVersion; retries include deadlock retries.
 */
export const SERIES = {
  conflicts: { label: 'Version conflicts', outcomes: ['version_conflict', 'stale_expected_version'] },
  deadlocks: { label: 'Deadlocks', outcomes: ['deadlock_detected'] },
  lockTimeouts: { label: 'Lock timeouts', outcomes: ['lock_timeout'] },
  retries: { label: 'Retries', outcomes: ['retry', 'deadlock_retried'] },
  alreadyApplied: { label: 'Already applied', outcomes: ['already_applied'] },
} as const;
export type SeriesKey = keyof typeof SERIES;
export const SERIES_KEYS = Object.keys(SERIES) as SeriesKey[];

const SERIES_OF = new Map<string, SeriesKey>(SERIES_KEYS.flatMap((k) => SERIES[k].outcomes.map((o) => [o, k] as const)));
export function seriesOf(outcome: string): SeriesKey | undefined {
  return SERIES_OF.get(outcome);
}

export type SeriesCounts = Record<SeriesKey, number>;
const zeroCounts = (): SeriesCounts => ({ conflicts: 0, deadlocks: 0, lockTimeouts: 0, retries: 0, alreadyApplied: 0 });

export type OutcomeRow = { bucket: Date | string; operation: string; transition: string; outcome: string; count: number | bigint };
export type WaitRow = { bucket: Date | string; operation: string; leMs: number; count: number | bigint };

/** The window's buckets, oldest first: `buckets` starts aligned to `bucketSeconds`, the last one containing `now`. */
export function windowBuckets(window: WindowKey, now: Date): { from: Date; to: Date; starts: Date[]; bucketSeconds: number } {
  const { bucketSeconds, buckets } = WINDOWS[window];
  const size = bucketSeconds * 1000;
  const last = Math.floor(now.getTime() / size) * size;
  const starts = Array.from({ length: buckets }, (_, i) => new Date(last - (buckets - 1 - i) * size));
  return { from: starts[0], to: new Date(last + size), starts, bucketSeconds };
}

/** Which bucket a time falls into (its start, in ms), aligned like windowBuckets. */
export function bucketStart(at: Date | string, bucketSeconds: number): number {
  const size = bucketSeconds * 1000;
  return Math.floor(new Date(at).getTime() / size) * size;
}

export type TimelinePoint = SeriesCounts & { t: string };

/** Counts per bucket and series, every bucket present (zeros where nothing happened), oldest first. */
export function outcomeTimeline(rows: readonly OutcomeRow[], window: WindowKey, now: Date): TimelinePoint[] {
  const { starts, bucketSeconds } = windowBuckets(window, now);
  const byStart = new Map(starts.map((s) => [s.getTime(), { t: s.toISOString(), ...zeroCounts() } as TimelinePoint]));
  for (const row of rows) {
    const key = seriesOf(row.outcome);
    const point = byStart.get(bucketStart(row.bucket, bucketSeconds));
    if (key && point) point[key] += Number(row.count);
  }
  return [...byStart.values()];
}

export type DimensionPoint = SeriesCounts & { name: string; total: number; success: number };

/** What people call the engine's operations on the Contention page. */
const OPERATION_NAMES: Record<string, string> = {
  update_status: 'Status change',
  bulk_update_status: 'Bulk status change',
  reevaluate: 'Correction',
  create: 'Create',
  pipeline: 'Pipeline run',
};

export function operationLabel(operation: string): string {
  return OPERATION_NAMES[operation] ?? operation.replace(/_/g, ' ');
}

/**
 * A transition as a person reads it: `RECEIVED->NORMALIZED` is "RECEIVED → NORMALIZED"; a bulk change, recorded
 * from any status, is "any → FAILED (bulk)"; outcomes that never reached a transition (refused, timed out, retried)
 * are grouped as NOT_RECORDED.
 */
export function transitionLabel(transition: string): string {
  if (!transition) return NOT_RECORDED;
  const [from, to] = transition.split('->');
  if (to === undefined) return transition;
  return from === '*' ? `any → ${to} (bulk)` : `${from} → ${to}`;
}

/** Totals per operation or per transition, named for people (operationLabel, transitionLabel). */
export function byDimension(rows: readonly OutcomeRow[], dimension: 'operation' | 'transition'): DimensionPoint[] {
  const map = new Map<string, DimensionPoint>();
  for (const row of rows) {
    const name = dimension === 'operation' ? operationLabel(row.operation) : transitionLabel(row.transition);
    const point = map.get(name) ?? { name, total: 0, success: 0, ...zeroCounts() };
    const key = seriesOf(row.outcome);
    const n = Number(row.count);
    if (key) {
      point[key] += n;
      point.total += n;
    } else if (row.outcome === 'success') {
      point.success += n;
    }
    map.set(name, point);
  }
  // Only names with something to show; most contention first, then the name.
  return [...map.values()]
    .filter((p) => p.total + p.success > 0)
    .sort((a, b) => b.total - a.total || b.success - a.success || a.name.localeCompare(b.name));
}
export const NOT_RECORDED = 'before any transition';

export function totals(rows: readonly OutcomeRow[]): SeriesCounts {
  const sum = zeroCounts();
  for (const row of rows) {
    const key = seriesOf(row.outcome);
    if (key) sum[key] += Number(row.count);
  }
  return sum;
}

/** A histogram bucket: `leMs` is its upper bound; -1 is the overflow bucket (above the last bound). */
export type HistogramBucket = { leMs: number; count: number };
export type Percentile = { ms: number; overflow: boolean } | null;

/**
 * The q-quantile (0 < q ≤ 1) of a cumulative-bound histogram, interpolated linearly inside the bucket it falls in
 * (the lower edge of the first bucket is 0). A quantile in the overflow bucket is reported as the last bound with
 * `overflow` (shown as "> 10 s"); no samples → null.
 */
export function percentile(buckets: readonly HistogramBucket[], q: number): Percentile {
  if (!(q > 0 && q <= 1)) throw new RangeError(`quantile must be in (0, 1], got ${q}`);
  const merged = new Map<number, number>();
  for (const b of buckets) if (b.count > 0) merged.set(b.leMs, (merged.get(b.leMs) ?? 0) + b.count);
  const bounded = [...merged.entries()].filter(([le]) => le >= 0).sort((a, b) => a[0] - b[0]);
  const overflow = merged.get(-1) ?? 0;
  const total = bounded.reduce((n, [, c]) => n + c, 0) + overflow;
  if (total === 0) return null;
  const rank = q * total;
  let cumulative = 0;
  let lower = 0;
  for (const [le, count] of bounded) {
    if (cumulative + count >= rank) {
      const fraction = (rank - cumulative) / count;
      return { ms: lower + (le - lower) * fraction, overflow: false };
    }
    cumulative += count;
    lower = le;
  }
  return { ms: maxBound(buckets, lower), overflow: true };
}

function maxBound(buckets: readonly HistogramBucket[], fallback: number): number {
  return buckets.reduce((m, b) => Math.max(m, b.leMs), fallback);
}

export const QUANTILES = { p50: 0.5, p95: 0.95, p99: 0.99 } as const;
export type PercentilePoint = { p50: number | null; p95: number | null; p99: number | null; samples: number; overflow: boolean };

function percentilePoint(buckets: HistogramBucket[], lastBound: number): PercentilePoint {
  const samples = buckets.reduce((n, b) => n + b.count, 0);
  const at = (q: number) => percentile(buckets, q);
  const p = { p50: at(QUANTILES.p50), p95: at(QUANTILES.p95), p99: at(QUANTILES.p99) };
  const value = (x: Percentile) => (x ? (x.overflow ? Math.max(x.ms, lastBound) : round(x.ms)) : null);
  return { p50: value(p.p50), p95: value(p.p95), p99: value(p.p99), samples, overflow: [p.p50, p.p95, p.p99].some((x) => x?.overflow) };
}
const round = (ms: number) => Math.round(ms * 10) / 10;

/** Lock-wait p50/p95/p99 per bucket (null where no lock was waited for), every bucket present. */
export function percentileTimeline(rows: readonly WaitRow[], window: WindowKey, now: Date, lastBound: number): (PercentilePoint & { t: string })[] {
  const { starts, bucketSeconds } = windowBuckets(window, now);
  const byStart = new Map<number, HistogramBucket[]>(starts.map((s) => [s.getTime(), []]));
  for (const row of rows) byStart.get(bucketStart(row.bucket, bucketSeconds))?.push({ leMs: row.leMs, count: Number(row.count) });
  return starts.map((s) => ({ t: s.toISOString(), ...percentilePoint(byStart.get(s.getTime())!, lastBound) }));
}

/** Lock-wait percentiles over the whole window, per operation (most samples first). */
export function percentilesByOperation(rows: readonly WaitRow[], lastBound: number): (PercentilePoint & { operation: string })[] {
  const byOp = new Map<string, HistogramBucket[]>();
  for (const row of rows) {
    const list = byOp.get(row.operation) ?? [];
    list.push({ leMs: row.leMs, count: Number(row.count) });
    byOp.set(row.operation, list);
  }
  return [...byOp.entries()]
    .map(([operation, buckets]) => ({ operation, ...percentilePoint(buckets, lastBound) }))
    .filter((p) => p.samples > 0)
    .sort((a, b) => b.samples - a.samples || a.operation.localeCompare(b.operation));
}

/** Tick labels: HH:MM (UTC) inside a day; the date only matters for the 24 h window's midnight. */
export function tickLabel(iso: string): string {
  return iso.slice(11, 16);
}

/** "12 ms", "1.5 s", "> 10 s" for the tables and tooltips. */
export function formatMs(ms: number | null, overflow = false): string {
  if (ms === null) return '—';
  if (overflow) return `> ${ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`}`;
  if (ms < 1000) return `${Number.isInteger(ms) ? ms : ms.toFixed(1)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/**
 * Postgres' deadlock counter is cumulative since its last stats reset. Given samples this console took (oldest
 * first), how many it grew by since the first sample inside the window — and from when that is measured.
 */
export function counterDelta(samples: readonly { at: number; value: number }[], from: number, current: { at: number; value: number }): { since: string; count: number } | null {
  const first = samples.find((s) => s.at >= from) ?? null;
  if (!first) return null;
  // A stats reset makes the counter go down: count from zero after it.
  const count = current.value >= first.value ? current.value - first.value : current.value;
  return { since: new Date(first.at).toISOString(), count };
}
