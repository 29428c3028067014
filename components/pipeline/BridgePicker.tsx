'use client';

import own from './rerun.module.css';

/** "Start from bridge": the bridge a rerun starts at, for one intent or several. */
export function BridgePicker({ bridges, value, onChange, testId }: { bridges: string[]; value: string; onChange: (bridge: string) => void; testId: string }) {
  return (
    <label className={own.field}>
      <span>Start from bridge</span>
      <select value={value} onChange={(e) => onChange(e.target.value)} data-testid={testId}>
        {bridges.map((b) => (
          <option key={b} value={b}>
            {b}
          </option>
        ))}
      </select>
    </label>
  );
}
