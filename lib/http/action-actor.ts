import { requireActionActor } from '@/lib/auth/server';
import type { Permission } from '@/lib/auth/permissions';
import type { AuthActor } from '@/lib/auth/types';

/**
 * Who is acting in a server action, if they may do `permission`: the signed-in user of the session cookie.
 * Throws the auth domain errors (401/403 codes) that actions turn into a result the form shows.
 */
export function actionActor(permission: Permission): Promise<AuthActor> {
  return requireActionActor(permission);
}
