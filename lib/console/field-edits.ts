/**
 * The field editor of a correction, as pure functions (browser-safe). A reviewer picks fields of the payload and
 * types new values; these read the payload as a list of fields, read each typed value by its kind, and build the
 * correction's diff — the same deep-merge patch the JSON editor writes — and back again, so both editors edit one
 * draft.
 *
 * The merge decides the shape of the patch: objects merge key by key, so `customer.name` is sent as
 * `{ "customer": { "name": … } }` and the rest of `customer` stays; anything else replaces, so a change to one item
 * of a list sends the whole list with that item changed. A null sets the field to null; the merge cannot remove a
 * field, so the editor offers no removal.
 */
import { formatJson, isRecord, mergeDiff, parseDiffText, type Json, type JsonRecord, type ParsedDiff } from './json-diff';

export type FieldPath = (string | number)[];
export const FIELD_KINDS = ['string', 'number', 'boolean', 'null', 'json'] as const;
export type FieldKind = (typeof FIELD_KINDS)[number];
/** One field of a correction as the reviewer left it: the raw input, read as `kind` when the diff is built. */
export type FieldEdit = { path: FieldPath; kind: FieldKind; input: string };
/** A field of the payload the reviewer may pick; `list` marks a whole list (edited as JSON, replaced whole). */
export type PayloadField = { path: FieldPath; label: string; value: Json; kind: FieldKind; list: boolean };
export type FieldError = { field: string; message: string };

const PLAIN_KEY = /^[A-Za-z_$][\w$-]*$/;

/** `customer.name`, `items[0].sku`; a key that would read ambiguously is quoted: `meta["a.b"]`. */
export function pathLabel(path: FieldPath): string {
  return path
    .map((seg, i) => {
      if (typeof seg === 'number') return `[${seg}]`;
      if (PLAIN_KEY.test(seg)) return i === 0 ? seg : `.${seg}`;
      return `[${JSON.stringify(seg)}]`;
    })
    .join('');
}

export function kindOf(value: Json | undefined): FieldKind {
  if (value === null) return 'null';
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return typeof value as FieldKind;
  return 'json';
}

/** The value at `path`, through objects and lists; undefined when the path is not there. */
export function valueAtPath(value: Json | undefined, path: FieldPath): Json | undefined {
  let current = value;
  for (const seg of path) {
    if (typeof seg === 'number') current = Array.isArray(current) ? current[seg] : undefined;
    else current = isRecord(current) && Object.hasOwn(current, seg) ? current[seg] : undefined;
    if (current === undefined) return undefined;
  }
  return current;
}

/**
 * Every field a reviewer can pick, in the payload's order: each leaf (`customer.name`), each list as a whole, and
 * the items of a list (up to `maxItems` of them, so a long list does not drown the picker).
 */
export function payloadFields(payload: JsonRecord, maxItems = 50): PayloadField[] {
  const walk = (value: Json, path: FieldPath): PayloadField[] => {
    if (isRecord(value) && Object.keys(value).length > 0) return Object.entries(value).flatMap(([k, v]) => walk(v, [...path, k]));
    const field = { path, label: pathLabel(path), value, kind: kindOf(value), list: Array.isArray(value) };
    if (!Array.isArray(value)) return [field];
    return [field, ...value.slice(0, maxItems).flatMap((item, i) => walk(item, [...path, i]))];
  };
  return Object.entries(payload).flatMap(([k, v]) => walk(v, [k]));
}

/** The text an input shows for a value of this kind. */
export function inputOf(value: Json | undefined, kind: FieldKind): string {
  if (kind === 'null' || value === undefined) return '';
  if (value === null) return kind === 'json' ? 'null' : '';
  if (kind === 'string' && typeof value === 'string') return value;
  if (kind === 'json') return formatJson(value);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A new field of the correction, starting at its current value (so adding it changes nothing until edited). */
export function editFor(field: Pick<PayloadField, 'path' | 'value'>): FieldEdit {
  // A field that is null now most often gets a text; the type can be changed beside it.
  const kind = field.value === null ? 'string' : kindOf(field.value);
  return { path: field.path, kind, input: inputOf(field.value, kind) };
}

/** The same field read as another kind, keeping what was typed where it still makes sense. */
export function retype(edit: FieldEdit, kind: FieldKind): FieldEdit {
  if (kind === edit.kind) return edit;
  if (kind === 'boolean') return { ...edit, kind, input: edit.input.trim() === 'true' ? 'true' : 'false' };
  if (kind === 'null') return { ...edit, kind, input: '' };
  if (kind === 'json') return { ...edit, kind, input: edit.kind === 'string' ? JSON.stringify(edit.input) : edit.kind === 'null' ? 'null' : edit.input };
  if (kind === 'string' && edit.kind === 'json') {
    const read = readEdit(edit);
    if (read.ok && typeof read.value === 'string') return { ...edit, kind, input: read.value };
  }
  return { ...edit, kind, input: edit.kind === 'null' ? '' : edit.input };
}

const NUMBER = /^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

export type ReadValue = { ok: true; value: Json } | { ok: false; message: string };

/** The typed value of one field: a number stays a number, a boolean a boolean; or what is wrong with the input. */
export function readEdit(edit: FieldEdit): ReadValue {
  const text = edit.input.trim();
  switch (edit.kind) {
    case 'string':
      return { ok: true, value: edit.input };
    case 'null':
      return { ok: true, value: null };
    case 'boolean':
      return text === 'true' || text === 'false' ? { ok: true, value: text === 'true' } : { ok: false, message: 'choose true or false.' };
    case 'number': {
      if (!text) return { ok: false, message: 'enter a number.' };
      const n = Number(text);
      return NUMBER.test(text) && Number.isFinite(n) ? { ok: true, value: n } : { ok: false, message: `"${text}" is not a number (digits, a dot for decimals: 12.5).` };
    }
    case 'json':
      if (!text) return { ok: false, message: 'enter a JSON value.' };
      try {
        return { ok: true, value: JSON.parse(text) as Json };
      } catch (err) {
        return { ok: false, message: `not valid JSON (${err instanceof Error ? err.message : String(err)}).` };
      }
  }
}

/** `{ a: { b: value } }` for the path `a.b` (keys defined as own properties, whatever their name). */
function nest(keys: string[], value: Json): JsonRecord {
  return keys.reduceRight<Json>((inner, key) => Object.fromEntries([[key, inner]]), value) as JsonRecord;
}

/** `target` with the value at `path` replaced (inside lists nothing merges); undefined when the path is not there. */
function replaceAt(target: Json | undefined, path: FieldPath, value: Json): Json | undefined {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (typeof head === 'number') {
    if (!Array.isArray(target) || head >= target.length) return undefined;
    const inner = replaceAt(target[head], rest, value);
    return inner === undefined ? undefined : target.map((item, i) => (i === head ? inner : item));
  }
  if (!isRecord(target) || (rest.length > 0 && !Object.hasOwn(target, head))) return undefined;
  const inner = replaceAt(target[head], rest, value);
  return inner === undefined ? undefined : { ...target, ...Object.fromEntries([[head, inner]]) };
}

/**
 * The correction's diff from the reviewer's fields, applied in order onto `payload` (the version the form edits).
 * A field under an object becomes a nested object of the diff; a field inside a list sends the list from its
 * outermost level down, whole, with that item changed. Each error names its field.
 */
export function buildPatch(payload: JsonRecord, edits: readonly FieldEdit[]): { diff: JsonRecord; errors: FieldError[] } {
  let diff: JsonRecord = {};
  const errors: FieldError[] = [];
  for (const edit of edits) {
    const field = pathLabel(edit.path);
    const read = readEdit(edit);
    if (!read.ok) {
      errors.push({ field, message: read.message });
      continue;
    }
    const cut = edit.path.findIndex((seg) => typeof seg === 'number');
    if (cut === -1) {
      diff = mergeDiff(diff, nest(edit.path as string[], read.value));
      continue;
    }
    const root = edit.path.slice(0, cut) as string[];
    const list = replaceAt(valueAtPath(mergeDiff(payload, diff), root), edit.path.slice(cut), read.value);
    if (list === undefined) errors.push({ field, message: 'this item is not in the list any more.' });
    else diff = mergeDiff(diff, nest(root, list));
  }
  return { diff, errors };
}

/** The fields as the form's verdict: the diff to send, or the first problem, naming its field. */
export function parseFieldEdits(payload: JsonRecord, edits: readonly FieldEdit[]): ParsedDiff {
  if (edits.length === 0) return { ok: false, message: 'Add a field to change: pick it above.' };
  const { diff, errors } = buildPatch(payload, edits);
  if (errors.length > 0) {
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    return { ok: false, message: `${errors[0].field}: ${errors[0].message}${more}` };
  }
  return { ok: true, diff };
}

const same = (a: Json | undefined, b: Json | undefined) => JSON.stringify(a) === JSON.stringify(b);

function editOf(path: FieldPath, value: Json): FieldEdit {
  const kind = kindOf(value);
  return { path, kind, input: inputOf(value, kind) };
}

/** Inside a list values replace: one field per item (or key of an item) that differs, while the shapes match. */
function replacementEdits(path: FieldPath, before: Json | undefined, after: Json): FieldEdit[] {
  if (same(before, after)) return [];
  if (Array.isArray(before) && Array.isArray(after) && before.length === after.length) return after.flatMap((item, i) => replacementEdits([...path, i], before[i], item));
  if (isRecord(before) && isRecord(after) && same(Object.keys(before).sort(), Object.keys(after).sort())) {
    return Object.entries(after).flatMap(([k, v]) => replacementEdits([...path, k], before[k], v));
  }
  return [editOf(path, after)];
}

function mergeEdits(path: FieldPath, current: Json | undefined, diff: JsonRecord): FieldEdit[] {
  return Object.entries(diff).flatMap(([key, value]) => {
    const at = [...path, key];
    const now = isRecord(current) && Object.hasOwn(current, key) ? current[key] : undefined;
    if (isRecord(value) && Object.keys(value).length > 0 && (now === undefined || isRecord(now))) return mergeEdits(at, now, value);
    if (Array.isArray(value) && Array.isArray(now)) {
      const items = replacementEdits(at, now, value);
      if (items.length > 0) return items;
    }
    return [editOf(at, value)];
  });
}

/**
 * A diff (typed in the JSON editor) as the reviewer's fields: one per leaf it sets, and one per changed item of a
 * list when the list keeps its length. `buildPatch` of the result changes `payload` exactly as `diff` does.
 */
export function editsFromDiff(payload: JsonRecord, diff: JsonRecord): FieldEdit[] {
  return mergeEdits([], payload, diff);
}

/** The JSON editor's text as fields, for a switch to the field editor: an empty object is no field yet. */
export function editsFromText(payload: JsonRecord, text: string): { ok: true; edits: FieldEdit[] } | { ok: false; message: string } {
  const parsed = parseDiffText(text);
  if (parsed.ok) return { ok: true, edits: editsFromDiff(payload, parsed.diff) };
  const blank = !text.trim() || text.replace(/\s/g, '') === '{}';
  return blank ? { ok: true, edits: [] } : parsed;
}
