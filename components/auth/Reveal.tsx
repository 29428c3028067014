'use client';

import { useState } from 'react';
import styles from './auth.module.css';

/** A secret shown exactly once (new API token, one-time password), with a copy button. */
export function Reveal({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className={styles.reveal} role="status" data-testid="revealed-secret">
      <strong>{label}</strong>
      <code className={styles.secret}>{value}</code>
      <button
        type="button"
        className={styles.secondary}
        onClick={() => {
          void navigator.clipboard?.writeText(value).then(() => setCopied(true), () => setCopied(false));
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}
