/**
 * Where a request may send the browser next (`?next=` after sign-in, and any other path taken from a request). The
 * value is parsed as a URL against the console's own origin and accepted only when it stays there; anything else
 * becomes `/`. Before parsing, control characters (tab, CR, LF, NUL …) and backslashes are refused in the value and
 * in every percent-decoded layer of it: browsers drop tabs and newlines from URLs and read `\` as `/`, so
 * `/%09/evil.example` or `/\evil.example` would otherwise turn into `//evil.example`, another site; CR/LF would
 * also break the Location header itself.
 */
const PROBE_ORIGIN = 'http://console.invalid';
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\\\u2028\u2029]/;
const MAX_LENGTH = 2048;

export function safeReturnPath(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_LENGTH) return '/';
  let layer = value;
  for (let depth = 0; depth < 4; depth++) {
    if (FORBIDDEN.test(layer)) return '/';
    let decoded: string;
    try {
      decoded = decodeURIComponent(layer);
    } catch {
      return '/';
    }
    if (decoded === layer) break;
    // A decoded layer that would start a new authority (`//…`) is as bad as the raw one.
    if (/^\/\//.test(decoded) || /^[a-z][a-z0-9+.-]*:/i.test(decoded)) return '/';
    layer = decoded;
  }
  if (!value.startsWith('/') || value.startsWith('//')) return '/';
  let url: URL;
  try {
    url = new URL(value, PROBE_ORIGIN);
  } catch {
    return '/';
  }
  if (url.origin !== PROBE_ORIGIN) return '/';
  const path = `${url.pathname}${url.search}${url.hash}`;
  // The serialised form must still be a plain same-origin path (the URL parser may have normalised dots away).
  return path.startsWith('/') && !path.startsWith('//') ? path : '/';
}
