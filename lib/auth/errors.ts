import { DomainError } from '@/lib/shared/errors';
import { can, permissionDeniedMessage, rolesGranting, type Permission, type Role } from './permissions';

/**
 * Authentication and authorisation failures as domain errors, so `lib/http/respond.ts` answers them in the API's
 * envelope and server actions can show their messages. Messages never echo a secret back. `headers`,
 * where present, are response headers HTTP asks for (WWW-Authenticate on 401, Retry-After on 429).
 */

/** No credentials, or credentials that are not (or no longer) valid: 401. */
export class UnauthenticatedError extends DomainError {
  readonly code = 'unauthenticated';
  readonly httpStatus = 401;
  /** HTTP wants a 401 to name the scheme it accepts. */
  readonly headers: Record<string, string> = { 'WWW-Authenticate': 'Bearer realm="bridge-console"' };
  constructor(message = 'Sign in, or send `Authorization: Bearer <token>` with a valid API token.') {
    super(message);
  }
}

/**
 * Authenticated, but the roles held do not grant the permission: 403. The message names the roles that would
 * (people read it); `details` keeps the permission's machine name, the granting roles and the roles held.
 */
export class ForbiddenError extends DomainError {
  readonly code = 'forbidden';
  readonly httpStatus = 403;
  constructor(
    readonly permission: Permission,
    held?: readonly Role[],
  ) {
    super(`${permissionDeniedMessage(permission, held)} Ask an administrator if you need it.`, {
      permission,
      requiredRoles: rolesGranting(permission),
      ...(held ? { roles: [...held] } : {}),
    });
  }
}

/** The permission check of every domain function and door: refused with a ForbiddenError that names the roles. */
export function requirePermission(actor: { roles: readonly Role[] }, permission: Permission): void {
  if (!can(actor, permission)) throw new ForbiddenError(permission, actor.roles);
}

/** A cookie-authenticated write that did not come from the console's own pages: 403. */
export class CsrfError extends DomainError {
  readonly code = 'csrf_rejected';
  readonly httpStatus = 403;
}

/** A generated or reset password must be replaced before the user does anything else: 403. */
export class PasswordChangeRequiredError extends DomainError {
  readonly code = 'password_change_required';
  readonly httpStatus = 403;
  constructor() {
    super('Choose a new password first (Account → Password): the current one was issued to you once.');
  }
}

/** Wrong username or password; deliberately the same for both, so usernames cannot be probed: 401. */
export class InvalidCredentialsError extends DomainError {
  readonly code = 'invalid_credentials';
  readonly httpStatus = 401;
  constructor() {
    super('The username or password is not correct.');
  }
}

/** Too many failed sign-ins for this username or client address within the window: 429. */
export class RateLimitedError extends DomainError {
  readonly code = 'rate_limited';
  readonly httpStatus = 429;
  readonly headers: Record<string, string>;
  constructor(readonly retryAfterSeconds: number) {
    super(`Too many failed sign-in attempts. Try again in ${formatWait(retryAfterSeconds)}.`, { retryAfterSeconds });
    this.headers = { 'Retry-After': String(retryAfterSeconds) };
  }
}

/** A username that already exists, or a change that would leave the console without an active admin: 409. */
export class UserConflictError extends DomainError {
  readonly code = 'user_conflict';
  readonly httpStatus = 409;
}

function formatWait(seconds: number): string {
  if (seconds < 90) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minutes`;
}
