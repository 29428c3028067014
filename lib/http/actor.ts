import { requireRequestActor } from '@/lib/auth/request';
import type { Permission } from '@/lib/auth/permissions';
import type { AuthActor } from '@/lib/auth/types';

/**
 * Who is acting on an API request, if they may do `permission`: the owner of the Bearer token, or the signed-in
 * user (session cookie, CSRF-checked on writes). Otherwise a 401/403 in the API envelope. Route handlers call it
 * first, before reading the body, so a refused request touches nothing. The audit log's actor comes from here,
 * never from the request body.
 */
export function requestActor(request: Request, permission: Permission): Promise<AuthActor> {
  return requireRequestActor(request, permission);
}
