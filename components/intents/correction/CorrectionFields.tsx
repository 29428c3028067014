'use client';

import { useId } from 'react';
import styles from '../intents.module.css';
import type { Draft } from './types';

/** Why the correction is made and where it comes from: both required, both kept with it in the history. */
export function CorrectionFields({ draft, onChange, touched, serverErrors }: { draft: Draft; onChange: (patch: Partial<Draft>) => void; touched: boolean; serverErrors: Record<string, string> }) {
  const reasonId = useId();
  const sourceId = useId();
  const { reason, source } = draft;
  return (
    <div className={styles.formRow}>
      <label className={styles.label} htmlFor={reasonId}>
        Reason
        <textarea
          id={reasonId}
          className="field"
          rows={2}
          value={reason}
          maxLength={2000}
          onChange={(e) => onChange({ reason: e.target.value })}
          aria-invalid={(touched && !reason.trim()) || Boolean(serverErrors.reason)}
          placeholder="Why this correction? (shown in the history)"
        />
        {touched && !reason.trim() && <span className={styles.fieldError}>Say why: the reason is kept with the correction.</span>}
        {serverErrors.reason && <span className={styles.fieldError}>{serverErrors.reason}</span>}
      </label>
      <label className={styles.label} htmlFor={sourceId}>
        Source
        <input id={sourceId} className="field" value={source} maxLength={255} onChange={(e) => onChange({ source: e.target.value })} aria-invalid={(touched && !source.trim()) || Boolean(serverErrors.source)} />
        <span className={styles.hint}>Where the correction comes from (a ticket, a partner file…)</span>
        {touched && !source.trim() && <span className={styles.fieldError}>Name the source.</span>}
      </label>
    </div>
  );
}
