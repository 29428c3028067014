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

/** `key`: the operation or transition as recorded (the Intents page filters on it); `name`: as people read it. */
export type DimensionPoint = SeriesCounts & { key: string; name: string; total: number; success: number };

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
    const point = map.get(name) ?? { key: dimension === 'operation' ? row.operation : row.transition, name, total: 0, success: 0, ...zeroCounts() };
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

/**
 * The upper bounds (ms) of the lock-wait histogram: the engine counts each wait into one of these buckets
 * (lib/intents/outcomes.ts), the Contention page and the metrics read them back. Defined here, below the engine, so
 * that the readers need not import the engine to know them.
 */
export const LOCK_WAIT_BOUNDS_MS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000] as const;

/** A histogram bucket: `leMs` is its upper bound; -1 is the overflow bucket (above the last bound). */
export type HistogramBucket = { leMs: number; count: number };
/** Waits that ran out after `ms` (lock timeouts): each lasted at least that long, how much longer is unknown. */
export type AtLeast = { ms: number; count: number };
/** `overflow`: above the histogram's last bound; `atLeast`: the quantile is a timed-out wait, so at least `ms`. */
export type Percentile = { ms: number; overflow: boolean; atLeast?: true } | null;

type Segment = { kind: 'spread'; from: number; to: number; count: number } | { kind: 'point'; at: number; count: number; overflow: boolean; atLeast: boolean };

/**
 * The q-quantile (0 < q ≤ 1) of a cumulative-bound histogram, interpolated linearly inside the bucket it falls in
 * (the lower edge of the first bucket is 0). A quantile in the overflow bucket is reported as the last bound with
 * `overflow` (shown as "> 10 s"); no samples → null.
 *
 * Timed-out waits (`atLeast`) are counted as waits of exactly their timeout, the least they lasted: acquired waits up
 * to that time come before them, longer ones after. A quantile that falls on them is reported as that timeout with
 * `atLeast` (shown as "≥ 5 s"): leaving them out would report the waits of everyone who got the lock and hide the
 * ones who gave up.
 */
export function percentile(buckets: readonly HistogramBucket[], q: number, atLeast: readonly AtLeast[] = [], lastBound = maxBound(buckets, 0)): Percentile {
  if (!(q > 0 && q <= 1)) throw new RangeError(`quantile must be in (0, 1], got ${q}`);
  const merged = new Map<number, number>();
  for (const b of buckets) if (b.count > 0) merged.set(b.leMs, (merged.get(b.leMs) ?? 0) + b.count);
  const bounded = [...merged.entries()].filter(([le]) => le >= 0).sort((a, b) => a[0] - b[0]);
  const overflow = merged.get(-1) ?? 0;
  const censored = new Map<number, number>();
  for (const t of atLeast) if (t.count > 0) censored.set(t.ms, (censored.get(t.ms) ?? 0) + t.count);
  const timeouts = [...censored.entries()].sort((a, b) => a[0] - b[0]);

  // The samples in value order: each bucket spread evenly over its range, split where a timeout falls inside it.
  const segments: Segment[] = [];
  let lower = 0;
  let next = 0;
  const point = (at: number, count: number) => segments.push({ kind: 'point', at, count, overflow: false, atLeast: true });
  for (const [le, count] of bounded) {
    let from = lower;
    while (next < timeouts.length && timeouts[next][0] <= le) {
      const at = Math.max(timeouts[next][0], from);
      if (at > from) segments.push({ kind: 'spread', from, to: at, count: (count * (at - from)) / (le - lower) });
      point(at, timeouts[next][1]);
      from = at;
      next++;
    }
    if (le > from || from === lower) segments.push({ kind: 'spread', from, to: le, count: le > lower ? (count * (le - from)) / (le - lower) : count });
    lower = le;
  }
  // Above the last bound: timeouts up to it, then the overflow bucket, then any longer timeouts.
  const overflowFrom = Math.max(lastBound, lower);
  for (; next < timeouts.length && timeouts[next][0] <= overflowFrom; next++) point(timeouts[next][0], timeouts[next][1]);
  if (overflow > 0) segments.push({ kind: 'point', at: overflowFrom, count: overflow, overflow: true, atLeast: false });
  for (; next < timeouts.length; next++) point(timeouts[next][0], timeouts[next][1]);

  const total = segments.reduce((n, x) => n + x.count, 0);
  if (total === 0) return null;
  const rank = q * total;
  let cumulative = 0;
  for (const x of segments) {
    if (x.count > 0 && cumulative + x.count >= rank - 1e-9) {
      if (x.kind === 'point') return x.atLeast ? { ms: x.at, overflow: false, atLeast: true } : { ms: x.at, overflow: true };
      return { ms: x.from + (x.to - x.from) * Math.min(1, (rank - cumulative) / x.count), overflow: false };
    }
    cumulative += x.count;
  }
  const last = segments[segments.length - 1];
  return last.kind === 'point' ? (last.atLeast ? { ms: last.at, overflow: false, atLeast: true } : { ms: last.at, overflow: true }) : { ms: last.to, overflow: false };
}

function maxBound(buckets: readonly HistogramBucket[], fallback: number): number {
  return buckets.reduce((m, b) => Math.max(m, b.leMs), fallback);
}

export const QUANTILES = { p50: 0.5, p95: 0.95, p99: 0.99 } as const;
export type QuantileKey = keyof typeof QUANTILES;
export type PercentilePoint = {
  p50: number | null;
  p95: number | null;
  p99: number | null;
  /** Waits counted: acquired locks and timed-out waits. */
  samples: number;
  /** Of those, waits that ran out (lock timeouts). */
  timedOut: number;
  overflow: boolean;
  /** Quantiles that fall on a timed-out wait: the value is the timeout, the least such a wait lasted. */
  atLeast: Record<QuantileKey, boolean>;
};

export type TimeoutRow = { bucket: Date | string; operation: string; timeoutMs: number; count: number | bigint };

function percentilePoint(buckets: HistogramBucket[], timeouts: AtLeast[], lastBound: number): PercentilePoint {
  const timedOut = timeouts.reduce((n, t) => n + t.count, 0);
  const samples = buckets.reduce((n, b) => n + b.count, 0) + timedOut;
  const at = (q: number) => percentile(buckets, q, timeouts, lastBound);
  const p = { p50: at(QUANTILES.p50), p95: at(QUANTILES.p95), p99: at(QUANTILES.p99) };
  const value = (x: Percentile) => (x ? (x.overflow ? Math.max(x.ms, lastBound) : round(x.ms)) : null);
  return {
    p50: value(p.p50),
    p95: value(p.p95),
    p99: value(p.p99),
    samples,
    timedOut,
    overflow: [p.p50, p.p95, p.p99].some((x) => x?.overflow),
    atLeast: { p50: Boolean(p.p50?.atLeast), p95: Boolean(p.p95?.atLeast), p99: Boolean(p.p99?.atLeast) },
  };
}
const round = (ms: number) => Math.round(ms * 10) / 10;

/** Lock-wait p50/p95/p99 per bucket (null where no lock was waited for), every bucket present; timed-out waits included. */
export function percentileTimeline(rows: readonly WaitRow[], timeoutRows: readonly TimeoutRow[], window: WindowKey, now: Date, lastBound: number): (PercentilePoint & { t: string })[] {
  const { starts, bucketSeconds } = windowBuckets(window, now);
  const byStart = new Map<number, { buckets: HistogramBucket[]; timeouts: AtLeast[] }>(starts.map((s) => [s.getTime(), { buckets: [], timeouts: [] }]));
  for (const row of rows) byStart.get(bucketStart(row.bucket, bucketSeconds))?.buckets.push({ leMs: row.leMs, count: Number(row.count) });
  for (const row of timeoutRows) byStart.get(bucketStart(row.bucket, bucketSeconds))?.timeouts.push({ ms: row.timeoutMs, count: Number(row.count) });
  return starts.map((s) => {
    const { buckets, timeouts } = byStart.get(s.getTime())!;
    return { t: s.toISOString(), ...percentilePoint(buckets, timeouts, lastBound) };
  });
}

/** Lock-wait percentiles over the whole window, per operation (most samples first); timed-out waits included. */
export function percentilesByOperation(rows: readonly WaitRow[], timeoutRows: readonly TimeoutRow[], lastBound: number): (PercentilePoint & { operation: string })[] {
  const byOp = new Map<string, { buckets: HistogramBucket[]; timeouts: AtLeast[] }>();
  const of = (operation: string) => {
    const entry = byOp.get(operation) ?? { buckets: [], timeouts: [] };
    byOp.set(operation, entry);
    return entry;
  };
  for (const row of rows) of(row.operation).buckets.push({ leMs: row.leMs, count: Number(row.count) });
  for (const row of timeoutRows) of(row.operation).timeouts.push({ ms: row.timeoutMs, count: Number(row.count) });
  return [...byOp.entries()]
    .map(([operation, { buckets, timeouts }]) => ({ operation, ...percentilePoint(buckets, timeouts, lastBound) }))
    .filter((p) => p.samples > 0)
    .sort((a, b) => b.samples - a.samples || a.operation.localeCompare(b.operation));
}

/** A percentile as the page shows it: "12 ms", "> 10 s" above the histogram, "≥ 5.00 s" when it is a timed-out wait. */
export function formatPercentile(point: PercentilePoint, key: QuantileKey, lastBoundMs: number): string {
  const ms = point[key];
  if (ms === null) return '—';
  if (point.atLeast[key]) return `≥ ${formatMs(ms)}`;
  return formatMs(ms, point.overflow && ms === lastBoundMs);
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
