import { requireRequestActor } from '@/lib/auth/request';
import type { Permission } from '@/lib/auth/permissions';
import type { AuthActor } from '@/lib/auth/types';

/**
 * Who is acting on an API request, if they may do `permission`: the owner of the Bearer token, or the signed-in
 * user (session cookie, CSRF-checked on writes). Otherwise a 401/403 in the API envelope. Route handlers call it
 * first, before reading the body, so a refused request touches nothing. The audit log's actor comes from here,
 * never from the request body.
 */
export async function requestActor(request: Request, permission: Permission): Promise<AuthActor> {
  const actor = await requireRequestActor(request, permission);
  actors.set(request, actor);
  return actor;
}

const actors = new WeakMap<Request, AuthActor>();

/** Who a request was authenticated as by requestActor, if it got that far: its error answer is shaped for them. */
export function authenticatedActor(request: Request): AuthActor | undefined {
  return actors.get(request);
}
