import { env } from '@/lib/env';

/**
 * The session cookie: httpOnly (no script reads it), SameSite=Lax (not sent on cross-site sub-requests or form
 * posts, still sent when following a link into the console), Secure outside development. When Secure, the
 * `__Host-` prefix also pins it to this host and path `/`, so a sibling subdomain cannot plant one.
 */
export function cookieSecure(): boolean {
  return env().BRIDGE_ENV !== 'development';
}

export function sessionCookieName(secure = cookieSecure()): string {
  return secure ? '__Host-bc_session' : 'bc_session';
}

export function sessionCookieOptions(expires: Date, secure = cookieSecure()) {
  return { httpOnly: true, sameSite: 'lax' as const, secure, path: '/', expires };
}

/** One cookie's value from a Cookie header (route handlers get a plain Request). */
export function readCookie(cookieHeader: string | null, name: string): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    const raw = part.slice(eq + 1).trim();
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw;
    }
  }
  return undefined;
}
