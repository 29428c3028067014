'use client';

import { useId } from 'react';
import type { ParsedDiff } from '@/lib/console/json-diff';
import styles from '../intents.module.css';

/**
 * The JSON editor of a correction with its live verdict (valid and how many fields it changes, or what is wrong).
 * Tab indents inside it; Escape then Tab leaves it, so keyboard users are never trapped.
 */
export function DiffEditor({ text, onText, onLeave, parsed, invalid, serverError, changedFields, openedVersion }: { text: string; onText: (text: string) => void; onLeave: () => void; parsed: ParsedDiff; invalid: boolean; serverError?: string; changedFields: number; openedVersion: number }) {
  const id = useId();
  const helpId = useId();
  return (
    <>
      <label className={styles.label} htmlFor={id}>
        <span>
          Diff (JSON) <span className={styles.hint}>— merged into the payload: only the fields to change, e.g. {'{ "amount": 12.5 }'}</span>
        </span>
      </label>
      <textarea
        id={id}
        className={`field ${styles.editor}`}
        value={text}
        onChange={(e) => onText(e.target.value)}
        spellCheck={false}
        aria-invalid={invalid || Boolean(serverError)}
        aria-describedby={helpId}
        rows={6}
        onKeyDown={(e) => {
          if (e.key === 'Tab' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
            // Indent inside the editor; Shift+Tab or Escape then Tab still leave it.
            const el = e.currentTarget;
            if (el.dataset.escaped === 'true') return;
            e.preventDefault();
            const { selectionStart: s, selectionEnd: end } = el;
            onText(`${text.slice(0, s)}  ${text.slice(end)}`);
            requestAnimationFrame(() => el.setSelectionRange(s + 2, s + 2));
          } else if (e.key === 'Escape') e.currentTarget.dataset.escaped = 'true';
        }}
        onBlur={(e) => {
          e.currentTarget.dataset.escaped = 'false';
          onLeave();
        }}
      />
      <div id={helpId} aria-live="polite">
        {invalid && !parsed.ok ? (
          <span className={styles.fieldError}>{parsed.message}</span>
        ) : parsed.ok ? (
          <span className={styles.fieldOk}>
            Valid: changes {changedFields} field{changedFields === 1 ? '' : 's'} of version {openedVersion}.
          </span>
        ) : (
          <span className={styles.hint}>Tab indents; press Escape, then Tab, to leave the editor.</span>
        )}
        {serverError && <span className={styles.fieldError}> {serverError}</span>}
      </div>
    </>
  );
}
