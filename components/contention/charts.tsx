'use client';

import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { formatMs, SERIES, SERIES_KEYS, tickLabel, type DimensionPoint, type PercentilePoint, type TimelinePoint } from '@/lib/contention/series';
import styles from '@/components/locks/console.module.css';

/** Recharts components that only render series built by lib/contention/series.ts. */

export const SERIES_COLORS: Record<(typeof SERIES_KEYS)[number], string> = {
  conflicts: '#d9480f',
  deadlocks: '#c92a2a',
  lockTimeouts: '#e8a400',
  retries: '#1d4ed8',
  alreadyApplied: '#2f9e44',
};

export function OutcomeTimelineChart({ data }: { data: TimelinePoint[] }) {
  return (
    <div className={styles.chartBox} data-testid="chart-timeline">
      <ResponsiveContainer width="100%" height="100%">
        <BarChart data={data} margin={{ top: 8, right: 16, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" vertical={false} />
          <XAxis dataKey="t" tickFormatter={tickLabel} minTickGap={28} fontSize={11} />
          <YAxis allowDecimals={false} fontSize={11} width={40} />
          <Tooltip labelFormatter={(t) => `${tickLabel(String(t))} UTC`} />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          {SERIES_KEYS.map((k) => (
            <Bar key={k} dataKey={k} name={SERIES[k].label} stackId="t" fill={SERIES_COLORS[k]} isAnimationActive={false} />
          ))}
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}

export function DimensionChart({ data, testId, withSuccess }: { data: DimensionPoint[]; testId: string; withSuccess?: boolean }) {
  return (
    <div className={styles.chartBox} data-testid={testId}>
      <ResponsiveContainer width="100%" height="100%">
        <BarChart data={data} layout="vertical" margin={{ top: 8, right: 16, bottom: 4, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" />
          <XAxis type="number" allowDecimals={false} fontSize={11} />
          <YAxis type="category" dataKey="name" width={170} fontSize={11} />
          <Tooltip />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          {SERIES_KEYS.map((k) => (
            <Bar key={k} dataKey={k} name={SERIES[k].label} stackId="c" fill={SERIES_COLORS[k]} isAnimationActive={false} />
          ))}
          {withSuccess && <Bar dataKey="success" name="Succeeded" stackId="c" fill="#adb5bd" isAnimationActive={false} />}
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}

export function LockWaitChart({ data }: { data: (PercentilePoint & { t: string })[] }) {
  return (
    <div className={styles.chartBox} data-testid="chart-lock-wait">
      <ResponsiveContainer width="100%" height="100%">
        <LineChart data={data} margin={{ top: 8, right: 16, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" />
          <XAxis dataKey="t" tickFormatter={tickLabel} minTickGap={28} fontSize={11} />
          <YAxis fontSize={11} width={56} tickFormatter={(v: number) => formatMs(v)} />
          <Tooltip labelFormatter={(t) => `${tickLabel(String(t))} UTC`} formatter={(v) => (typeof v === 'number' ? formatMs(v) : String(v ?? '—'))} />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          <Line type="monotone" dataKey="p50" name="p50" stroke="#2f9e44" dot={false} connectNulls strokeWidth={2} isAnimationActive={false} />
          <Line type="monotone" dataKey="p95" name="p95" stroke="#e8a400" dot={false} connectNulls strokeWidth={2} isAnimationActive={false} />
          <Line type="monotone" dataKey="p99" name="p99" stroke="#c92a2a" dot={false} connectNulls strokeWidth={2} isAnimationActive={false} />
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}
