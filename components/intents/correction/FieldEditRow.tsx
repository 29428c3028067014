'use client';

import { useEffect, useId, useRef } from 'react';
import { pathLabel, retype, type FieldEdit, type FieldKind } from '@/lib/console/field-edits';
import { inlineJson, type Json } from '@/lib/console/json-diff';
import styles from '../intents.module.css';
import f from './fields.module.css';

const KIND_NAMES: Record<FieldKind, string> = { string: 'Text', number: 'Number', boolean: 'True / false', null: 'Null', json: 'JSON' };

type Focusable = HTMLInputElement & HTMLSelectElement & HTMLTextAreaElement;

/**
 * One field of the correction: its path, its value at the version the form edits, its type, and the new value in
 * an input that fits the type. Every control's name says which field it is for ("New value of amount"), so a
 * screen-reader user moving from field to field always knows where they are.
 */
export function FieldEditRow({ edit, now, error, onChange, onRemove, focusOnMount }: { edit: FieldEdit; now: Json | undefined; error?: string; onChange: (edit: FieldEdit) => void; onRemove: () => void; focusOnMount: boolean }) {
  const label = pathLabel(edit.path);
  const typeId = useId();
  const valueId = useId();
  const errorId = useId();
  const first = useRef<Focusable>(null);
  useEffect(() => {
    // Only the row just added takes the focus, once: the reviewer types its new value straight away.
    if (focusOnMount) first.current?.focus();
  }, [focusOnMount]);
  const named = <span className="visually-hidden"> of {label}</span>;
  return (
    <li className={f.row} data-testid="field-edit" data-path={label} data-invalid={Boolean(error)}>
      <div>
        <span className={f.path}>{label}</span>
        <span className={f.now} data-testid="field-now">
          now: {inlineJson(now)}
        </span>
      </div>
      <label className={f.control} htmlFor={typeId}>
        <span>Type{named}</span>
        <select id={typeId} className="field" value={edit.kind} onChange={(e) => onChange(retype(edit, e.target.value as FieldKind))} ref={edit.kind === 'null' ? first : undefined}>
          {Object.entries(KIND_NAMES).map(([kind, name]) => (
            <option key={kind} value={kind}>
              {name}
            </option>
          ))}
        </select>
      </label>
      {edit.kind === 'null' ? (
        <div className={f.control}>
          <span>New value{named}</span>
          <span className={f.nullValue}>null</span>
        </div>
      ) : (
        <label className={f.control} htmlFor={valueId}>
          <span>New value{named}</span>
          <ValueInput id={valueId} edit={edit} onChange={onChange} invalid={Boolean(error)} describedBy={error ? errorId : undefined} inputRef={first} />
        </label>
      )}
      <button type="button" className={`btn btn-sm ${f.remove}`} onClick={onRemove}>
        Remove<span className="visually-hidden"> {label} from this correction</span>
      </button>
      {error && (
        <span id={errorId} className={`${styles.fieldError} ${f.rowError}`} data-testid="field-error">
          {label}: {error}
        </span>
      )}
    </li>
  );
}

/** The input for a value of the row's type: a number field, a true/false choice, a text, or JSON for lists and objects. */
function ValueInput({ id, edit, onChange, invalid, describedBy, inputRef }: { id: string; edit: FieldEdit; onChange: (edit: FieldEdit) => void; invalid: boolean; describedBy?: string; inputRef: React.Ref<Focusable> }) {
  const common = { id, className: 'field', 'aria-invalid': invalid, 'aria-describedby': describedBy, ref: inputRef };
  const set = (input: string) => onChange({ ...edit, input });
  if (edit.kind === 'boolean') {
    return (
      <select {...common} value={edit.input} onChange={(e) => set(e.target.value)}>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  }
  if (edit.kind === 'json') {
    return <textarea {...common} rows={Math.min(8, edit.input.split('\n').length + 1)} spellCheck={false} value={edit.input} onChange={(e) => set(e.target.value)} />;
  }
  return <input {...common} type="text" inputMode={edit.kind === 'number' ? 'decimal' : undefined} spellCheck={edit.kind === 'string'} autoComplete="off" value={edit.input} onChange={(e) => set(e.target.value)} />;
}
