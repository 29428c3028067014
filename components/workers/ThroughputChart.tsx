'use client';

import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import styles from '@/components/locks/console.module.css';
import { AXIS_LINE, LEGEND, TICK, TOOLTIP } from '@/components/ui/chart-style';
import { formatUtc, formatUtcTime } from '@/components/ui/time';
import type { ThroughputPoint } from '@/lib/workers/queries';

const SERIES: { key: Exclude<keyof ThroughputPoint, 'minute'>; label: string; color: string }[] = [
  { key: 'claimed', label: 'claimed', color: 'var(--chart-retries)' },
  { key: 'completed', label: 'completed', color: 'var(--chart-already-applied)' },
  { key: 'retried', label: 'retried', color: 'var(--chart-lock-timeouts)' },
  { key: 'failed', label: 'failed', color: 'var(--chart-deadlocks)' },
  { key: 'rescued', label: 'rescued (stale claims)', color: 'var(--chart-conflicts)' },
];

/** Claims, completions, retries, failures and rescues per minute over the last hour. */
export function ThroughputChart({ data }: { data: ThroughputPoint[] }) {
  return (
    <div className={styles.chartBox} data-testid="workers-throughput">
      <ResponsiveContainer width="100%" height="100%">
        <LineChart data={data} margin={{ top: 8, right: 16, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" vertical={false} />
          <XAxis dataKey="minute" tickFormatter={(t) => formatUtcTime(String(t)).slice(0, 5)} minTickGap={32} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} />
          <YAxis allowDecimals={false} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} width={44} />
          <Tooltip {...TOOLTIP} labelFormatter={(t) => formatUtc(String(t), { seconds: false })} />
          <Legend {...LEGEND} />
          {SERIES.map((s) => (
            <Line key={s.key} dataKey={s.key} name={s.label} stroke={s.color} dot={false} strokeWidth={2} type="linear" isAnimationActive={false} />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}
