import { env } from '@/lib/env';
import { CsrfError } from './errors';

/**
 * CSRF protection for cookie-authenticated route handlers. A browser sends the session cookie with any request
 * to the console, including one a hostile page triggers, so a write is accepted only when the browser itself
 * says it came from the console's own origin: `Sec-Fetch-Site: same-origin` (set by the browser, not by page
 * script), or, from browsers without Fetch Metadata, an `Origin` equal to the console's. Bearer-token requests
 * carry no ambient credential and skip this. Server actions get the same Origin check from Next itself.
 */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export type CsrfOptions = { trustedOrigins: string[]; trustProxy: boolean };

function defaultOptions(): CsrfOptions {
  const e = env();
  return { trustedOrigins: e.AUTH_TRUSTED_ORIGINS, trustProxy: e.TRUST_PROXY };
}

/** The origins this request may legitimately come from: its own URL's, the Host it was sent to, and configured ones. */
function expectedOrigins(request: Request, options: CsrfOptions): Set<string> {
  const origins = new Set(options.trustedOrigins.map((o) => o.replace(/\/+$/, '').toLowerCase()));
  const url = new URL(request.url);
  origins.add(url.origin.toLowerCase());
  const host = request.headers.get('host');
  if (host) origins.add(`${url.protocol}//${host}`.toLowerCase());
  if (options.trustProxy) {
    const fHost = request.headers.get('x-forwarded-host')?.split(',')[0]?.trim();
    const fProto = request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim() ?? url.protocol.replace(':', '');
    if (fHost) origins.add(`${fProto}://${fHost}`.toLowerCase());
  }
  return origins;
}

export function assertSameOrigin(request: Request, options: CsrfOptions = defaultOptions()): void {
  if (SAFE_METHODS.has(request.method.toUpperCase())) return;
  const site = request.headers.get('sec-fetch-site')?.toLowerCase();
  const origin = request.headers.get('origin')?.toLowerCase();
  const originOk = !!origin && origin !== 'null' && expectedOrigins(request, options).has(origin);
  // The browser computed this, not the page: behind a proxy that rewrites Host it is still right.
  // `none` is a user-initiated request (typed URL, bookmark), which no other site can cause.
  if (site === 'same-origin' || site === 'none') return;
  if (site) {
    if (originOk) return; // same-site or cross-site, but from an origin the operator listed in AUTH_TRUSTED_ORIGINS
    throw new CsrfError('Refused: a cookie-authenticated change must come from the console’s own pages (this one came from another site). API clients use `Authorization: Bearer <token>`.');
  }
  if (originOk) return;
  throw new CsrfError(
    origin
      ? `Refused: the request's Origin (${origin}) is not this console's. API clients use \`Authorization: Bearer <token>\`.`
      : 'Refused: a cookie-authenticated change needs an Origin header from the browser. API clients use `Authorization: Bearer <token>`.',
  );
}
