import type { Actor } from '@/lib/shared/intent-types';
import type { Role } from './permissions';

/**
 * Who is acting, as established by a session cookie or an API token. It is a domain `Actor` (its `name` is the
 * username, which the audit log records), never built from anything in a request body.
 */
export type AuthActor = Actor & {
  userId: string;
  roles: Role[];
  via: 'session' | 'token';
  /** The session row's id (sha256 of the cookie secret) or the API token's id. */
  credentialId: string;
  mustChangePassword: boolean;
};

/** A user as the admin pages see it: never the password hash. */
export type UserView = {
  id: string;
  username: string;
  roles: Role[];
  disabled: boolean;
  mustChangePassword: boolean;
  createdAt: string;
  createdBy: string | null;
  lastSignInAt: string | null;
};

export type ApiTokenView = {
  id: string;
  userId: string;
  username: string;
  name: string;
  prefix: string;
  createdAt: string;
  createdBy: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
};

export type ClientInfo = { ip?: string | null; userAgent?: string | null };
