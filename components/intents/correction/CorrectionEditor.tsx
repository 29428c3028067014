'use client';

import { useState } from 'react';
import { diffLines, type ParsedDiff } from '@/lib/console/json-diff';
import { DiffView } from '../DiffView';
import styles from '../intents.module.css';
import { DiffEditor } from './DiffEditor';
import { FieldEditor } from './FieldEditor';
import f from './fields.module.css';
import { EMPTY_DIFF, type Draft, type EditMode } from './types';

type Props = {
  draft: Draft;
  parsed: ParsedDiff;
  touched: boolean;
  serverError?: string;
  onUpdate: (patch: Partial<Draft>) => void;
  onLeave: () => void;
  onSwitch: (mode: EditMode) => string | null;
};

/**
 * What the correction changes, in one of two editors over the same draft: field by field (the default, for
 * reviewers) or the diff as JSON (for those who prefer to type it). Switching carries the correction over; below
 * either one, the preview of what it changes at the version the form edits.
 */
export function CorrectionEditor({ draft, parsed, touched, serverError, onUpdate, onLeave, onSwitch }: Props) {
  const [switchError, setSwitchError] = useState('');
  const { mode, opened, text } = draft;
  const preview = parsed.ok ? diffLines(opened.payload, parsed.diff) : [];
  const choose = (next: EditMode) => setSwitchError(onSwitch(next) ?? '');
  const edit = (patch: Partial<Draft>) => {
    setSwitchError('');
    onUpdate(patch);
  };
  return (
    <>
      <div className={f.modeBar}>
        <div className={f.modeSwitch} role="group" aria-label="Edit the correction as">
          {(['fields', 'json'] as const).map((m) => (
            <button key={m} type="button" aria-pressed={mode === m} onClick={() => choose(m)}>
              {m === 'fields' ? 'Fields' : 'JSON'}
            </button>
          ))}
        </div>
        <span aria-live="polite" className={switchError ? styles.fieldError : styles.hint} data-testid="mode-note">
          {switchError || (mode === 'fields' ? 'Pick the fields to change; values are typed (a number stays a number).' : 'The same correction as a JSON diff.')}
        </span>
      </div>
      {mode === 'fields' ? (
        <FieldEditor payload={opened.payload} edits={draft.edits} onEdits={(edits) => edit({ edits })} touched={touched} serverError={serverError} />
      ) : (
        <DiffEditor
          text={text}
          onText={(next) => edit({ text: next })}
          onLeave={onLeave}
          parsed={parsed}
          invalid={touched || text !== EMPTY_DIFF ? !parsed.ok : false}
          serverError={serverError}
          changedFields={preview.length}
          openedVersion={opened.version}
        />
      )}
      {parsed.ok && preview.length > 0 && <DiffView lines={preview} label="Preview of your change" />}
      {mode === 'fields' && parsed.ok && preview.length === 0 && <p className="muted">No change yet: every field still has its current value.</p>}
    </>
  );
}
