/**
 * Pure JSON helpers for the console's correction views (browser-safe: no Node imports). A correction's `diff` is
 * deep-merged into the payload (objects merge key by key, anything else replaces), so the change it makes is the
 * set of leaf paths it sets; these turn that into lines a person reads as a diff.
 */
import { deepMerge } from '@/lib/shared/json';

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonRecord = { [key: string]: Json };

export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The preview of the deep merge the database applies to a correction (one rule: lib/shared/json.ts). */
export const mergeDiff: (target: JsonRecord, diff: JsonRecord) => JsonRecord = deepMerge;

export type DiffLine = { path: string; before: Json | undefined; after: Json | undefined };

function leafPaths(value: JsonRecord, prefix = ''): { path: string; value: Json }[] {
  return Object.entries(value).flatMap(([key, v]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    return isRecord(v) && Object.keys(v).length > 0 ? leafPaths(v, path) : [{ path, value: v }];
  });
}

function valueAt(value: Json | undefined, path: string): Json | undefined {
  let current: Json | undefined = value;
  for (const key of path.split('.')) {
    if (!isRecord(current)) return undefined;
    current = current[key];
  }
  return current;
}

/** What applying `diff` to `before` changes, one line per leaf path; paths it sets to the same value are left out. */
export function diffLines(before: JsonRecord, diff: JsonRecord): DiffLine[] {
  const after = mergeDiff(before, diff);
  return leafPaths(diff)
    .map(({ path }) => ({ path, before: valueAt(before, path), after: valueAt(after, path) }))
    .filter((line) => JSON.stringify(line.before) !== JSON.stringify(line.after));
}

/** Leaf paths a diff sets, for "touches the same field" warnings. */
export function touchedPaths(diff: JsonRecord): string[] {
  return leafPaths(diff).map((l) => l.path);
}

/** Two sets of paths overlap when one is a prefix of the other (`a.b` and `a.b.c`). */
export function overlappingPaths(a: string[], b: string[]): string[] {
  const overlaps = (x: string, y: string) => x === y || x.startsWith(`${y}.`) || y.startsWith(`${x}.`);
  return a.filter((x) => b.some((y) => overlaps(x, y)));
}

export type ParsedDiff = { ok: true; diff: JsonRecord } | { ok: false; message: string };

/** Validates the editor's text as a correction diff, with a message a reviewer can act on. */
export function parseDiffText(text: string): ParsedDiff {
  if (!text.trim()) return { ok: false, message: 'Enter a JSON object with the fields to change.' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, message: `Not valid JSON: ${describeJsonError(err, text)}` };
  }
  if (!isRecord(value)) return { ok: false, message: 'The diff must be a JSON object, e.g. { "amount": 12 }.' };
  if (Object.keys(value).length === 0) return { ok: false, message: 'The diff must change at least one field.' };
  return { ok: true, diff: value };
}

function describeJsonError(err: unknown, text: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const at = /at position (\d+)/.exec(message);
  if (!at || /line \d+ column \d+/.test(message)) return message;
  const offset = Number(at[1]);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `${message} (line ${line} column ${column})`;
}

export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** A value on one line for diff views: strings quoted, objects compact, long ones cut. */
export function inlineJson(value: Json | undefined, max = 120): string {
  if (value === undefined) return '(not set)';
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * What the console records with a correction it submits (`metadata.console.before`): the value of each field the
 * diff sets, as the reviewer saw it at the version they edited. The correction applies only at that exact version
 * (expectedVersion), so these are exactly the values it replaced, and the history can show a two-sided diff.
 */
export type RecordedBefore = { path: string; value?: Json }[];

export function recordBefore(payload: JsonRecord, diff: JsonRecord): RecordedBefore {
  return diffLines(payload, diff).map((l) => (l.before === undefined ? { path: l.path } : { path: l.path, value: l.before }));
}

export function recordedBeforeOf(metadata: unknown): Map<string, Json | undefined> | null {
  if (!isRecord(metadata) || !isRecord(metadata.console) || !Array.isArray(metadata.console.before)) return null;
  const out = new Map<string, Json | undefined>();
  for (const item of metadata.console.before) if (isRecord(item) && typeof item.path === 'string') out.set(item.path, item.value);
  return out;
}

/**
 * A correction's lines for the history: before values from what the console recorded when it was applied, else
 * from earlier corrections in the history (`known`), else unknown (shown as an addition only).
 */
export function correctionLines(known: JsonRecord, diff: JsonRecord, metadata: unknown): DiffLine[] {
  const recorded = recordedBeforeOf(metadata);
  const lines = diffLines(known, diff);
  if (!recorded) return lines;
  return leafPaths(diff).map(({ path, value }) => ({ path, before: recorded.has(path) ? recorded.get(path) : valueAt(known, path), after: value }));
}
