import { env } from '@/lib/env';
import { readCookie, sessionCookieName } from './cookies';
import { assertSameOrigin } from './csrf';
import { PasswordChangeRequiredError, requirePermission, UnauthenticatedError } from './errors';
import type { Permission } from './permissions';
import { secretsEqual } from './secrets';
import { validateSession } from './sessions';
import { verifyApiToken } from './tokens';
import type { AuthActor } from './types';

/**
 * The route handlers' door: who sent this request, and may they do this? A Bearer token wins; without an
 * Authorization header the session cookie is used, and then writes must pass the CSRF check. A credential that
 * is present but wrong is a 401 — it never falls back to another credential or to anonymous.
 */
function bearerFrom(request: Request): string | null {
  const header = request.headers.get('authorization');
  if (header === null) return null;
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
  if (!match) throw new UnauthenticatedError('The Authorization header must be `Bearer <token>`.');
  return match[1];
}

/** The actor behind a request, or null when it carries no credentials at all. */
export async function authenticateRequest(request: Request): Promise<AuthActor | null> {
  const bearer = bearerFrom(request);
  if (bearer !== null) {
    const actor = await verifyApiToken(bearer);
    if (!actor) throw new UnauthenticatedError('The API token is not valid: it may be mistyped, revoked or expired, or its owner disabled.');
    return actor;
  }
  const secret = readCookie(request.headers.get('cookie'), sessionCookieName());
  if (secret === undefined) return null;
  // Checked before the session is even looked up: a forged cross-site write learns nothing and touches nothing.
  assertSameOrigin(request);
  const valid = await validateSession(secret);
  if (!valid) throw new UnauthenticatedError('Your session has ended (signed out or expired); sign in again.');
  return valid.actor;
}

/** The signed-in user or token owner, if they hold `permission`; otherwise a 401 or 403 in the API envelope. */
export async function requireRequestActor(request: Request, permission: Permission): Promise<AuthActor> {
  const actor = await authenticateRequest(request);
  if (!actor) throw new UnauthenticatedError();
  return authorize(actor, permission);
}

/** Permission check shared by both doors; a session with a one-time password may only go change it. */
export function authorize(actor: AuthActor, permission: Permission): AuthActor {
  if (actor.via === 'session' && actor.mustChangePassword) throw new PasswordChangeRequiredError();
  requirePermission(actor, permission);
  return actor;
}

/** GET /api/metrics: open, unless METRICS_TOKEN is set; then it wants exactly that Bearer token. */
export function requireMetricsAccess(request: Request, metricsToken = env().METRICS_TOKEN): void {
  if (!metricsToken) return;
  const header = request.headers.get('authorization');
  const match = header ? /^Bearer[ ]+([^\s]+)\s*$/i.exec(header) : null;
  if (!match || !secretsEqual(match[1], metricsToken)) {
    throw new UnauthenticatedError('Metrics need `Authorization: Bearer <METRICS_TOKEN>`.');
  }
}
