'use client';

import { useId } from 'react';
import styles from './ui.module.css';

/**
 * How a view refreshes: `'live'` (pushed changes), `'paused'`, or polling every N milliseconds. Pages choose which
 * options make sense (a live list offers Live/Paused; a polled view intervals and Paused).
 */
export type RefreshMode = 'live' | 'paused' | number;

export const POLLED_OPTIONS: RefreshMode[] = [2_000, 5_000, 15_000, 60_000, 'paused'];
export const LIVE_OPTIONS: RefreshMode[] = ['live', 'paused'];

export function refreshLabel(mode: RefreshMode): string {
  if (mode === 'live') return 'Live';
  if (mode === 'paused') return 'Paused';
  return mode < 60_000 ? `Every ${mode / 1000} s` : `Every ${mode / 60_000} min`;
}

/** For TanStack Query's `refetchInterval`: a number when polling, false otherwise. */
export function refetchIntervalOf(mode: RefreshMode): number | false {
  return typeof mode === 'number' ? mode : false;
}

/**
 * `heldBy`: the view is paused for a reason of its own that the person cannot switch off here (e.g. "Paused while
 * rows are selected"): the control shows that reason instead of a mode that is not in force, and is disabled until
 * the reason ends.
 */
export function RefreshControl({
  value,
  onChange,
  options = POLLED_OPTIONS,
  label = 'Refresh',
  heldBy,
}: {
  value: RefreshMode;
  onChange: (mode: RefreshMode) => void;
  options?: RefreshMode[];
  label?: string;
  heldBy?: string;
}) {
  const id = useId();
  return (
    <span className={styles.refresh}>
      <label htmlFor={id}>{label}</label>
      <select
        id={id}
        className="field"
        value={heldBy ? 'held' : String(value)}
        disabled={Boolean(heldBy)}
        data-testid="refresh-control"
        onChange={(e) => {
          const raw = e.target.value;
          onChange(raw === 'live' || raw === 'paused' ? raw : Number(raw));
        }}
      >
        {heldBy && <option value="held">{heldBy}</option>}
        {options.map((o) => (
          <option key={String(o)} value={String(o)}>
            {refreshLabel(o)}
          </option>
        ))}
      </select>
    </span>
  );
}
