/**
 * What people paste into the Intents search, understood the way they mean it (pure: used by the server to build the
 * query and by the browser to highlight the matches):
 *
 * - an intent id, whole (`3f2a9c1b-…`) or its first characters as the table shows them (`3f2a9c1b`);
 * - a source (`billing-sync`, or explicitly `source:billing-sync`) — decided by the server, which knows the sources;
 * - payload text as the table displays it: `city: Osaka`, `amount: 629.13`, several joined by ` · ` as in a row,
 *   nested fields by their last key or their dotted path (`customer.city: Osaka`);
 * - raw JSON in any spacing: `{"city":"Osaka"}`, `"city" : "Osaka"`, `"amount":629.13`;
 * - anything else: free text anywhere in the payload.
 *
 * Payload searches become substrings of the payload's JSON text as PostgreSQL prints it (`payload::text`: keys in
 * jsonb's order, `": "` and `", "` between tokens), which the trigram index on that expression serves. So a pasted
 * `{"city":"Osaka"}` matches `"city": "Osaka"` wherever it is nested, and `city: Osaka` the same.
 */
export type PayloadSearch = {
  /** Substrings of `payload::text`, all of which must occur (case-insensitive). */
  patterns: string[];
  /** Texts to mark in the table's one-line payload summary (case-insensitive). */
  highlights: string[];
};

export type ParsedSearch =
  | { kind: 'none' }
  /** A whole id; when no intent has it, the payload search (a payload may mention an id). */
  | { kind: 'id'; id: string; payload: PayloadSearch }
  /** The first characters of an id (8 or more, as the table shows them); when none starts so, the payload search. */
  | { kind: 'idPrefix'; prefix: string; payload: PayloadSearch }
  /**
   * Fewer than 8 hex characters (`c734`): the start of an id or text in the payload, both searched (a short
   * reference number is hex too).
   */
  | { kind: 'idOrPayload'; prefix: string; payload: PayloadSearch }
  /** `source:x` — only the source. */
  | { kind: 'source'; source: string }
  /** Payload text; `sourceCandidate` is the text itself when it could be a source name (the server checks). */
  | { kind: 'payload'; payload: PayloadSearch; sourceCandidate: string | null };

/** Trigram search needs three characters in a row to use its index; shorter terms would read every row. */
export const MIN_TERM_LENGTH = 3;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A prefix of a uuid as written (dashes where a uuid has them), 8 characters or more. */
export const UUID_PREFIX = /^[0-9a-f]{8}(?:-[0-9a-f]{0,4}(?:-[0-9a-f]{0,4}(?:-[0-9a-f]{0,4}(?:-[0-9a-f]{0,12})?)?)?)?$/i;
/** Fewer characters than the table shows of an id. */
const SHORT_ID_PREFIX = /^[0-9a-f]{1,7}$/i;
const SOURCE_LIKE = /^[A-Za-z0-9][\w.:/@+-]{0,254}$/;
/** `key: value` as the table shows a field; the key may be a dotted path. */
const DISPLAY_TERM = /^([A-Za-z_$][\w$-]*(?:\.[A-Za-z_$][\w$-]*)*)\s*:\s*(.+)$/s;

export function isUuid(text: string): boolean {
  return UUID.test(text);
}

/** Whether `text` is the start of an id as the console shows one: its first 8 characters or more. */
export function looksLikeIdPrefix(text: string): boolean {
  return UUID_PREFIX.test(text);
}

/** Whether `text` could be the first 1–7 characters of an id. */
export function isShortIdPrefix(text: string): boolean {
  return SHORT_ID_PREFIX.test(text);
}

/** The inclusive range of uuids that start with `prefix` (dashes ignored), for a primary-key range scan. */
export function uuidPrefixRange(prefix: string): { low: string; high: string } {
  const hex = prefix.replace(/-/g, '').toLowerCase();
  const fmt = (h: string) => `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
  return { low: fmt(hex.padEnd(32, '0')), high: fmt(hex.padEnd(32, 'f')) };
}

/** jsonb's key order: shorter keys first, then by their UTF-8 bytes. */
const utf8 = new TextEncoder();
function jsonbKeyOrder(a: string, b: string): number {
  const ab = utf8.encode(a);
  const bb = utf8.encode(b);
  if (ab.length !== bb.length) return ab.length - bb.length;
  for (let i = 0; i < ab.length; i++) if (ab[i] !== bb[i]) return ab[i] - bb[i];
  return 0;
}

/** A JSON value printed as PostgreSQL prints jsonb (`payload::text`). */
export function jsonbText(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(jsonbText).join(', ')}]`;
  const entries = Object.keys(value).sort(jsonbKeyOrder);
  return `{${entries.map((k) => `${JSON.stringify(k)}: ${jsonbText((value as Record<string, unknown>)[k])}`).join(', ')}}`;
}

/** A field's value as the table shows it: strings as they are, anything else as compact JSON. */
function displayValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * JSON-ish text that does not parse (a fragment cut anywhere) in jsonb's spacing: whitespace outside strings
 * dropped, then one space after each `:` and `,`.
 */
export function normaliseJsonSpacing(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === '\\' && i + 1 < text.length) out += text[++i];
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
    } else if (c === ':' || c === ',') out += `${c} `;
    else if (!/\s/.test(c)) out += c;
  }
  return out;
}

function tryJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** The last key of a dotted path (`customer.city` → `city`): the payload text names a field by its own key. */
const lastKey = (path: string) => path.slice(path.lastIndexOf('.') + 1);

/** One field and value: `"key": <value as jsonb prints it>`; a string value may be the start of the string. */
function fieldTerm(key: string, value: unknown, acc: PayloadSearch, valueIsPrefix: boolean) {
  const k = JSON.stringify(key);
  const v = typeof value === 'string' && valueIsPrefix ? JSON.stringify(value).slice(0, -1) : jsonbText(value);
  acc.patterns.push(`${k}: ${v}`);
  acc.highlights.push(`${key}: ${displayValue(value)}`, `${k}:${JSON.stringify(value)}`);
  if (typeof value === 'string' && value.length >= MIN_TERM_LENGTH) acc.highlights.push(value);
}

function fromJson(value: unknown, acc: PayloadSearch) {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) fieldTerm(k, v, acc, false);
    return;
  }
  acc.patterns.push(jsonbText(value));
  acc.highlights.push(displayValue(value));
}

function payloadTerm(term: string, acc: PayloadSearch) {
  const text = term.trim();
  if (!text) return;
  const looksJson = /^[{["]/.test(text);
  if (looksJson) {
    const whole = tryJson(text);
    if (whole.ok) return fromJson(whole.value, acc);
    // `"city": "Osaka", "id": "C1"` — the inside of an object.
    const wrapped = tryJson(`{${text.replace(/,\s*$/, '')}}`);
    if (wrapped.ok) return fromJson(wrapped.value, acc);
    const fragment = normaliseJsonSpacing(text);
    acc.patterns.push(fragment);
    acc.highlights.push(fragment.replace(/: /g, ':').replace(/, /g, ','));
    return;
  }
  const display = DISPLAY_TERM.exec(text);
  if (display && !/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    const key = lastKey(display[1]);
    const raw = display[2].trim();
    const parsed = tryJson(raw);
    // `amount: 629.13`, `adjusted: true`, `customer: {"id":"C1"}`, `city: "Osaka"` are JSON values, matched whole;
    // `city: Osaka` is the start of a string.
    if (parsed.ok) return fieldTerm(key, parsed.value, acc, false);
    return fieldTerm(key, raw, acc, true);
  }
  acc.patterns.push(text);
  acc.highlights.push(text);
}

/** The text of `q` understood (see above); the server still decides between an id, a source and payload text. */
export function parseSearch(q: string | null | undefined): ParsedSearch {
  const text = (q ?? '').trim();
  if (!text) return { kind: 'none' };
  const explicitSource = /^source\s*:\s*(.+)$/i.exec(text);
  if (explicitSource && SOURCE_LIKE.test(explicitSource[1].trim())) return { kind: 'source', source: explicitSource[1].trim() };
  const payload: PayloadSearch = { patterns: [], highlights: [] };
  // The table joins a row's fields with " · ": a pasted run of them means all of them.
  for (const term of text.split(/\s+·\s+/)) payloadTerm(term, payload);
  payload.patterns = [...new Set(payload.patterns)];
  payload.highlights = [...new Set(payload.highlights.filter((h) => h.length > 0))];
  if (isUuid(text)) return { kind: 'id', id: text.toLowerCase(), payload };
  if (looksLikeIdPrefix(text)) return { kind: 'idPrefix', prefix: text.toLowerCase(), payload };
  if (isShortIdPrefix(text)) return { kind: 'idOrPayload', prefix: text.toLowerCase(), payload };
  return { kind: 'payload', payload, sourceCandidate: SOURCE_LIKE.test(text) && !text.includes(': ') ? text : null };
}

/** Terms too short for the index (fewer than three characters besides quotes and spacing). */
export function tooShortPatterns(payload: PayloadSearch): string[] {
  return payload.patterns.filter((p) => p.replace(/[\s"]/g, '').length < MIN_TERM_LENGTH);
}

/** Where the highlights occur in `text`: sorted, non-overlapping [start, end) ranges, longest match first. */
export function highlightRanges(text: string, highlights: string[]): [number, number][] {
  const lower = text.toLowerCase();
  const found: [number, number][] = [];
  for (const h of [...highlights].sort((a, b) => b.length - a.length)) {
    const needle = h.toLowerCase();
    if (!needle) continue;
    for (let i = lower.indexOf(needle); i >= 0; i = lower.indexOf(needle, i + needle.length)) {
      const end = i + needle.length;
      if (!found.some(([s, e]) => i < e && end > s)) found.push([i, end]);
    }
  }
  return found.sort((a, b) => a[0] - b[0]);
}
