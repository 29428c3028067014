import { cookies, headers } from 'next/headers';
import { redirect } from 'next/navigation';
import { cache } from 'react';
import { clientInfoFromHeaders } from './client-info';
import { commitPosition, registerRequestReadScope, type ReadScope } from '@/lib/db/read';
import { parseLsn } from '@/lib/db/lsn';
import { readAfterCookieName, readAfterCookieOptions, sessionCookieName, sessionCookieOptions } from './cookies';
import { assertActionOrigin } from './csrf';
import { UnauthenticatedError } from './errors';
import type { Permission } from './permissions';
import { authorize } from './request';
import { safeReturnPath } from './redirect';
import { validateSession } from './sessions';
import type { AuthActor, ClientInfo } from './types';

/**
 * The doors for pages, layouts and server actions, which read the session cookie through Next's `cookies()`.
 * Server actions need no CSRF token of ours: a cookie-authenticated action must come from the console's own origin
 * (assertActionOrigin, the rule the route handlers apply too), whichever server runs the console.
 */

/** The signed-in user, or null. Memoised per request, so a layout and its page validate the session once. */
export const currentUser = cache(async (): Promise<AuthActor | null> => {
  const jar = await cookies();
  const valid = await validateSession(jar.get(sessionCookieName())?.value);
  return valid?.actor ?? null;
});

/**
 * For server actions acting with the session cookie: refuses (403 `csrf_rejected`) a call that did not come from the
 * console's own pages. Next lets an action without an Origin through, and `next start` has no front door of ours.
 */
export async function assertActionFromConsole(): Promise<void> {
  assertActionOrigin(await headers());
}

/** For server actions: the signed-in user if they hold `permission`; throws 401/403 domain errors otherwise. */
export async function requireActionActor(permission: Permission): Promise<AuthActor> {
  await assertActionFromConsole();
  const actor = await currentUser();
  if (!actor) throw new UnauthenticatedError('Your session has ended; sign in again.');
  return authorize(actor, permission);
}

/**
 * For pages: the signed-in user, or a redirect to the sign-in page (coming back here afterwards). A user who
 * still has a one-time password is sent to change it first.
 */
export async function requirePageUser(returnTo: string, options: { allowPasswordChange?: boolean } = {}): Promise<AuthActor> {
  const actor = await currentUser();
  if (!actor) redirect(`/sign-in?next=${encodeURIComponent(safeReturnPath(returnTo))}`);
  if (actor.mustChangePassword && !options.allowPasswordChange) redirect('/account/password');
  return actor;
}

/** Only paths on this console: sign-in must not become a redirector (the rule is in lib/auth/redirect.ts). */
export { safeReturnPath } from './redirect';

export async function requestClientInfo(): Promise<ClientInfo> {
  return clientInfoFromHeaders(await headers());
}

export async function readSessionSecret(): Promise<string | undefined> {
  return (await cookies()).get(sessionCookieName())?.value;
}

export async function setSessionCookie(secret: string, expires: Date): Promise<void> {
  (await cookies()).set(sessionCookieName(), secret, sessionCookieOptions(expires));
}

export async function clearSessionCookie(): Promise<void> {
  (await cookies()).set(sessionCookieName(), '', { ...sessionCookieOptions(new Date(0)), maxAge: 0 });
}

/**
 * The read scope of a page render (lib/db/read.ts): reads may go to a replica that has replayed this browser's last
 * command (its cookie). Memoised per request, so a page's panels share one choice of replica. Outside a request
 * (scripts, workers) cookies() throws: no scope, every read on the primary.
 */
const pageReadScope = cache(async (): Promise<ReadScope | null> => {
  const jar = await cookies();
  return { after: parseLsn(jar.get(readAfterCookieName())?.value) ?? 0n };
});
registerRequestReadScope(pageReadScope);

/**
 * After a server action's command, with read replicas configured: the primary's position now goes into the
 * browser's read-after cookie, so the page re-rendered after the action, and every read after it, see the change.
 */
export async function rememberCommitInSession(): Promise<void> {
  try {
    const lsn = await commitPosition();
    if (lsn) (await cookies()).set(readAfterCookieName(), lsn, readAfterCookieOptions());
  } catch (err) {
    // The command stands; at worst the author's next read waits for nothing and may show the state before it.
    console.warn('[reads] could not note the commit position after a command:', err);
  }
}
