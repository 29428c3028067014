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

/**
 * The WAL position of this browser's last command (lib/db/read.ts): the console reads from a replica only once it has
 * replayed that far, so a person always sees their own change. Not a secret (a position in the primary's log), but
 * httpOnly all the same: no script has a use for it. It lives as long as the browser session.
 */
export function readAfterCookieName(secure = cookieSecure()): string {
  return secure ? '__Host-bc_read_after' : 'bc_read_after';
}

export function readAfterCookieOptions(secure = cookieSecure()) {
  return { httpOnly: true, sameSite: 'lax' as const, secure, path: '/' };
}

/** The Set-Cookie header value of the read-after cookie, for answers that are not Next's (the JSON API). */
export function readAfterSetCookie(lsn: string, secure = cookieSecure()): string {
  return `${readAfterCookieName(secure)}=${encodeURIComponent(lsn)}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
