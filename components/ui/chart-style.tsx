import type { ReactNode } from 'react';

/**
 * Recharts styling in the theme's colours, for every chart (Recharts' defaults are fixed greys and series colours,
 * unreadable in dark mode): axis ticks and lines, legend text and the tooltip.
 */
export const TICK = { fill: 'var(--muted)', fontSize: 11 };
export const AXIS_LINE = { stroke: 'var(--border-strong)' };
const legendText = (value: ReactNode) => <span style={{ color: 'var(--text)' }}>{value}</span>;
export const LEGEND = { wrapperStyle: { fontSize: 12 }, formatter: legendText };
export const TOOLTIP = {
  contentStyle: { background: 'var(--surface)', border: '1px solid var(--border-strong)', borderRadius: 6, color: 'var(--text)', fontSize: 12 },
  itemStyle: { color: 'var(--text)' },
  labelStyle: { color: 'var(--text)', fontWeight: 600 },
};
