'use client';

import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import styles from '@/components/locks/console.module.css';
import { AXIS_LINE, LEGEND, TICK, TOOLTIP } from '@/components/ui/chart-style';
import { formatUtc, formatUtcTime } from '@/components/ui/time';
import type { ThroughputPoint } from '@/lib/workers/queries';

type SeriesKey = Exclude<keyof ThroughputPoint, 'minute'>;

/**
 * The series often coincide: a healthy queue completes each minute what it claimed, and retries, failures and
 * rescues sit together on zero. Colour alone cannot show lines drawn on the same pixels, so each series also has a
 * width and a dash of its own, and they are drawn widest first: where lines meet, the solid ones show as bands around
 * each other and the dashed ones on top show through their gaps. The legend draws each line's dash too.
 */
const SERIES: { key: SeriesKey; label: string; color: string; width: number; dash?: string }[] = [
  { key: 'completed', label: 'completed', color: 'var(--chart-already-applied)', width: 5 },
  { key: 'failed', label: 'failed', color: 'var(--chart-deadlocks)', width: 2.5 },
  { key: 'claimed', label: 'claimed', color: 'var(--chart-retries)', width: 2, dash: '7 4' },
  { key: 'retried', label: 'retried', color: 'var(--chart-lock-timeouts)', width: 2, dash: '2 3' },
  { key: 'rescued', label: 'rescued (stale claims)', color: 'var(--chart-conflicts)', width: 2, dash: '10 3 3 3' },
];

/** The legend and the tooltip read in the pipeline's order, not in the order the lines are drawn. */
const READING_ORDER: SeriesKey[] = ['claimed', 'completed', 'retried', 'failed', 'rescued'];
const readingPosition = (item: { dataKey?: unknown }) => READING_ORDER.indexOf(item.dataKey as SeriesKey);

/** Claims, completions, retries, failures and rescues per minute over the last hour. */
export function ThroughputChart({ data }: { data: ThroughputPoint[] }) {
  return (
    <div className={styles.chartBox} data-testid="workers-throughput">
      <ResponsiveContainer width="100%" height="100%">
        <LineChart data={data} margin={{ top: 8, right: 16, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" vertical={false} />
          <XAxis dataKey="minute" tickFormatter={(t) => formatUtcTime(String(t)).slice(0, 5)} minTickGap={32} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} />
          <YAxis allowDecimals={false} tick={TICK} axisLine={AXIS_LINE} tickLine={AXIS_LINE} width={44} />
          <Tooltip {...TOOLTIP} itemSorter={readingPosition} labelFormatter={(t) => formatUtc(String(t), { seconds: false })} />
          <Legend {...LEGEND} iconSize={26} itemSorter={readingPosition} />
          {SERIES.map((s) => (
            <Line
              key={s.key}
              dataKey={s.key}
              name={s.label}
              stroke={s.color}
              strokeWidth={s.width}
              strokeDasharray={s.dash}
              legendType="plainline"
              dot={false}
              activeDot={{ r: 4 }}
              type="linear"
              isAnimationActive={false}
            />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}
