'use client';

import { useId, useMemo, useRef, useState } from 'react';
import { buildPatch, editFor, pathLabel, payloadFields, valueAtPath, type FieldEdit, type PayloadField } from '@/lib/console/field-edits';
import { formatJson, inlineJson, type JsonRecord } from '@/lib/console/json-diff';
import styles from '../intents.module.css';
import { FieldEditRow } from './FieldEditRow';
import f from './fields.module.css';

/**
 * The correction field by field, for reviewers: pick a field of the payload (as it is at the version the form
 * edits), see its value, type the new one in an input of its type, as many fields as needed. The diff this sends is
 * shown as it will be sent, and the JSON editor beside reads and writes the same one.
 */
export function FieldEditor({ payload, edits, onEdits, touched, serverError }: { payload: JsonRecord; edits: FieldEdit[]; onEdits: (edits: FieldEdit[]) => void; touched: boolean; serverError?: string }) {
  const fields = useMemo(() => payloadFields(payload), [payload]);
  const [justAdded, setJustAdded] = useState<string | null>(null);
  const picker = useRef<HTMLSelectElement>(null);
  const { diff, errors } = buildPatch(payload, edits);
  const errorOf = new Map(errors.map((e) => [e.field, e.message]));
  const added = new Set(edits.map((e) => pathLabel(e.path)));

  const add = (field: PayloadField) => {
    setJustAdded(field.label);
    onEdits([...edits, editFor(field)]);
  };
  const remove = (index: number) => {
    onEdits(edits.filter((_, i) => i !== index));
    // The Remove button is gone with its row: the focus goes back to the picker rather than to the page's top.
    picker.current?.focus();
  };

  return (
    <div className={styles.form} role="group" aria-label="Fields to change" data-testid="field-editor">
      <FieldPicker fields={fields} added={added} onAdd={add} selectRef={picker} />
      {edits.length === 0 ? (
        <p className={f.empty}>No field in this correction yet: pick one above and add it. A correction cannot remove a field; it can set one to null.</p>
      ) : (
        <ul className={f.rows} aria-label="Fields in this correction">
          {edits.map((edit, i) => {
            const label = pathLabel(edit.path);
            return (
              <FieldEditRow
                key={label}
                edit={edit}
                now={valueAtPath(payload, edit.path)}
                error={errorOf.get(label)}
                onChange={(next) => onEdits(edits.map((e, j) => (j === i ? next : e)))}
                onRemove={() => remove(i)}
                focusOnMount={label === justAdded}
              />
            );
          })}
        </ul>
      )}
      <div aria-live="polite">
        {touched && edits.length === 0 && <span className={styles.fieldError}>Add a field to change: pick it above.</span>}
        {touched && errors.length > 0 && (
          <span className={styles.fieldError}>
            Not applied: {errors[0].field}: {errors[0].message}
            {errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}
          </span>
        )}
        {serverError && <span className={styles.fieldError}>{serverError}</span>}
      </div>
      {edits.length > 0 && errors.length === 0 && (
        <details className={f.patch}>
          <summary>The diff this correction sends (JSON)</summary>
          <pre data-testid="field-patch">{formatJson(diff)}</pre>
        </details>
      )}
    </div>
  );
}

/** A field of the payload to add: chosen in a list (arrow keys, type-ahead), added with the button or Enter. */
function FieldPicker({ fields, added, onAdd, selectRef }: { fields: PayloadField[]; added: Set<string>; onAdd: (field: PayloadField) => void; selectRef: React.Ref<HTMLSelectElement> }) {
  const id = useId();
  const hintId = useId();
  const [chosen, setChosen] = useState('');
  const [hint, setHint] = useState('');
  const addChosen = () => {
    const field = fields.find((x) => x.label === chosen);
    if (!field) return setHint('Choose a field in the list first.');
    if (added.has(field.label)) return setHint(`${field.label} is already in this correction.`);
    setHint('');
    setChosen('');
    onAdd(field);
  };
  return (
    <div className={f.picker}>
      <label className={styles.label} htmlFor={id}>
        Field to change
        <select
          id={id}
          ref={selectRef}
          className="field"
          value={chosen}
          aria-describedby={hintId}
          onChange={(e) => setChosen(e.target.value)}
          onKeyDown={(e) => {
            if (e.key !== 'Enter') return;
            // Enter adds the chosen field; it must not submit the whole correction.
            e.preventDefault();
            addChosen();
          }}
        >
          <option value="">Choose a field…</option>
          {fields.map((field) => (
            <option key={field.label} value={field.label} disabled={added.has(field.label)}>
              {field.label}
              {field.list ? ' (whole list)' : ''} = {inlineJson(field.value, 40)}
            </option>
          ))}
        </select>
      </label>
      <button type="button" className="btn" onClick={addChosen}>
        Add field
      </button>
      <span id={hintId} className={styles.hint} aria-live="polite">
        {hint}
      </span>
    </div>
  );
}
