'use client';

import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { formatMs, SERIES, SERIES_KEYS, tickLabel, type DimensionPoint, type PercentilePoint, type QuantileKey, type SeriesKey, type TimelinePoint } from '@/lib/contention/series';
import { AXIS_LINE, LEGEND, TICK, TOOLTIP } from '@/components/ui/chart-style';
import { formatUtc } from '@/components/ui/time';
import styles from '@/components/locks/console.module.css';

/** Recharts components that only render series built by lib/contention/series.ts. */

/**
 * One colour per series in every chart and tile, from the theme (app/globals.css `--chart-*`): light and dark
 * each have their own values, chosen to stay apart for colour-blind readers too.
 */
export const SERIES_COLORS: Record<(typeof SERIES_KEYS)[number], string> = {
  conflicts: 'var(--chart-conflicts)',
  deadlocks: 'var(--chart-deadlocks)',
  lockTimeouts: 'var(--chart-lock-timeouts)',
  retries: 'var(--chart-retries)',
  alreadyApplied: 'var(--chart-already-applied)',
};

const bucketLabel = (t: unknown) => formatUtc(String(t), { seconds: false });

/** A click on a bar segment: which series, and the datum it belongs to (a time bucket, an operation, a transition). */
export type SegmentClick<T> = (series: SeriesKey, datum: T) => void;

/** Recharts hands the clicked rectangle with its datum as `payload`. */
const datumOf = <T,>(entry: unknown): T | undefined => (entry as { payload?: T } | undefined)?.payload;

export function OutcomeTimelineChart({ data, onSegment }: { data: TimelinePoint[]; onSegment?: SegmentClick<TimelinePoint> }) {
  return (
    <div className={styles.chartBox} data-testid="chart-timeline">
      <ResponsiveContainer width="100%" height="100%">
        <BarChart data={data} margin={{ top: 8, right: 16, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" vertical={false} />
          <XAxis dataKey="t" tickFormatter={tickLabel} minTickGap={28} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} />
          <YAxis allowDecimals={false} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} width={40} />
          <Tooltip {...TOOLTIP} cursor={{ fill: 'var(--surface-hover)' }} labelFormatter={bucketLabel} />
          <Legend {...LEGEND} />
          {SERIES_KEYS.map((k) => (
            <Bar
              key={k}
              dataKey={k}
              name={SERIES[k].label}
              stackId="t"
              fill={SERIES_COLORS[k]}
              isAnimationActive={false}
              cursor={onSegment ? 'pointer' : undefined}
              onClick={(entry) => {
                const datum = datumOf<TimelinePoint>(entry);
                if (onSegment && datum) onSegment(k, datum);
              }}
            />
          ))}
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}

/** Height per category row, so that every category gets its own label (Recharts drops labels that do not fit). */
const ROW_PX = 30;
const DIMENSION_CHROME_PX = 90;

export function DimensionChart({ data, testId, withSuccess, onSegment }: { data: DimensionPoint[]; testId: string; withSuccess?: boolean; onSegment?: SegmentClick<DimensionPoint> }) {
  const height = Math.max(200, data.length * ROW_PX + DIMENSION_CHROME_PX);
  return (
    <div className={styles.chartBox} style={{ height }} data-testid={testId}>
      <ResponsiveContainer width="100%" height="100%">
        <BarChart data={data} layout="vertical" margin={{ top: 8, right: 16, bottom: 4, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" />
          <XAxis type="number" allowDecimals={false} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} />
          <YAxis type="category" dataKey="name" width={170} interval={0} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} />
          <Tooltip {...TOOLTIP} cursor={{ fill: 'var(--surface-hover)' }} />
          <Legend {...LEGEND} />
          {SERIES_KEYS.map((k) => (
            <Bar
              key={k}
              dataKey={k}
              name={SERIES[k].label}
              stackId="c"
              fill={SERIES_COLORS[k]}
              isAnimationActive={false}
              cursor={onSegment ? 'pointer' : undefined}
              onClick={(entry) => {
                const datum = datumOf<DimensionPoint>(entry);
                if (onSegment && datum) onSegment(k, datum);
              }}
            />
          ))}
          {withSuccess && <Bar dataKey="success" name="Succeeded" stackId="c" fill="var(--chart-success)" isAnimationActive={false} />}
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}

/**
 * Straight segments between the minutes that had samples, each sample marked: a smoothed curve overshoots between
 * sparse points and suggests waits that were never measured.
 */
export function LockWaitChart({ data }: { data: (PercentilePoint & { t: string })[] }) {
  const line = (color: string) => ({ type: 'linear' as const, connectNulls: true, strokeWidth: 2, isAnimationActive: false, stroke: color, dot: { r: 2.5, fill: color, strokeDasharray: '' }, activeDot: { r: 4 } });
  return (
    <div className={styles.chartBox} data-testid="chart-lock-wait">
      <ResponsiveContainer width="100%" height="100%">
        <LineChart data={data} margin={{ top: 8, right: 16, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" />
          <XAxis dataKey="t" tickFormatter={tickLabel} minTickGap={28} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} />
          <YAxis width={56} tickFormatter={(v: number) => formatMs(v)} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} />
          <Tooltip
            {...TOOLTIP}
            labelFormatter={bucketLabel}
            formatter={(v, name, item) => {
              const point = (item as { payload?: PercentilePoint } | undefined)?.payload;
              const atLeast = point?.atLeast[name as QuantileKey] ? '≥ ' : '';
              return typeof v === 'number' ? `${atLeast}${formatMs(v)}` : String(v ?? '—');
            }}
          />
          <Legend {...LEGEND} />
          <Line {...line('var(--chart-p50)')} dataKey="p50" name="p50" />
          <Line {...line('var(--chart-p95)')} dataKey="p95" name="p95" strokeDasharray="6 3" />
          <Line {...line('var(--chart-p99)')} dataKey="p99" name="p99" strokeDasharray="2 3" />
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}
