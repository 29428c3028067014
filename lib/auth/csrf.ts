import { env } from '@/lib/env';
import { CsrfError } from './errors';

/**
 * CSRF protection for cookie-authenticated route handlers. A browser sends the session cookie with any request
 * to the console, including one a hostile page triggers, so a write is accepted only when the browser itself
 * says it came from the console's own origin: `Sec-Fetch-Site: same-origin` (set by the browser, not by page
 * script), or, from browsers without Fetch Metadata, an `Origin` equal to the console's. Bearer-token requests
 * carry no ambient credential and skip this. Server actions get the same rule from assertActionOrigin below.
 */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export type CsrfOptions = { trustedOrigins: string[]; trustProxy: boolean };

function defaultOptions(): CsrfOptions {
  const e = env();
  return { trustedOrigins: e.AUTH_TRUSTED_ORIGINS, trustProxy: e.TRUST_PROXY };
}

/**
 * The origins a request may legitimately come from: `self` (its own URL's origin, when the door knows it), the Host
 * it was sent to under each scheme in `schemes`, the forwarded host behind a trusted proxy, and configured ones.
 */
function expectedOrigins(headers: Headers, self: string | null, schemes: readonly string[], options: CsrfOptions): Set<string> {
  const origins = new Set(options.trustedOrigins.map((o) => o.replace(/\/+$/, '').toLowerCase()));
  if (self) origins.add(self.toLowerCase());
  const host = headers.get('host');
  if (host) for (const scheme of schemes) origins.add(`${scheme}//${host}`.toLowerCase());
  if (options.trustProxy) {
    const fHost = headers.get('x-forwarded-host')?.split(',')[0]?.trim();
    const fProto = headers.get('x-forwarded-proto')?.split(',')[0]?.trim() ?? schemes[0].replace(':', '');
    if (fHost) origins.add(`${fProto}://${fHost}`.toLowerCase());
  }
  return origins;
}

/** The rule itself, on a write's headers: the browser says it came from here (Fetch Metadata), or its Origin is ours. */
function checkOrigin(headers: Headers, expected: () => Set<string>): void {
  const site = headers.get('sec-fetch-site')?.toLowerCase();
  const origin = headers.get('origin')?.toLowerCase();
  const originOk = !!origin && origin !== 'null' && expected().has(origin);
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

export function assertSameOrigin(request: Request, options: CsrfOptions = defaultOptions()): void {
  if (SAFE_METHODS.has(request.method.toUpperCase())) return;
  const url = new URL(request.url);
  checkOrigin(request.headers, () => expectedOrigins(request.headers, url.origin, [url.protocol], options));
}

/**
 * The same rule for a server action, which sees only the request's headers (no URL, so no scheme): the Host is
 * accepted under http and https, as Next's own action check compares hosts only. The console's server refuses
 * foreign actions at its front door already (lib/http/gate.ts); this keeps a console run by bare `next start` from
 * executing a cookie-authenticated action that another site triggered, or one sent without any Origin.
 */
export function assertActionOrigin(headers: Headers, options: CsrfOptions = defaultOptions()): void {
  checkOrigin(headers, () => expectedOrigins(headers, null, ['http:', 'https:'], options));
}
