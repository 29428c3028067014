import { formatUtc } from '@/components/ui/time';
import type { Verdict } from '@/lib/replay/types';
import r from './replay.module.css';

/** Small presentation helpers for the Replay page. */
export function when(iso: string): string {
  return formatUtc(iso);
}

export function duration(fromIso: string, toIso: string | null): string {
  const ms = (toIso ? Date.parse(toIso) : Date.now()) - Date.parse(fromIso);
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

export function figure(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (unit === 'ratio') return `${Math.round(value * 100)} %`;
  if (unit === '/s') return `${Math.round(value)} /s`;
  return `${Math.round(value * 100) / 100} ${unit}`;
}

export function VerdictBadge({ verdict, testId }: { verdict: Verdict | null; testId?: string }) {
  if (!verdict) return <span className={`${r.verdict} ${r.neutral}`} data-testid={testId}>—</span>;
  return (
    <span
      className={`${r.verdict} ${verdict === 'pass' ? r.pass : verdict === 'smoke' ? r.neutral : r.fail}`}
      data-testid={testId}
      title={verdict === 'smoke' ? 'Smoke run: every judged check met; timing targets not judged at this size' : undefined}
    >
      {verdict}
    </span>
  );
}
