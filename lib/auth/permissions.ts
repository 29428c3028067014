/**
 * Roles and what they may do. The table is the single source of truth: route handlers, server actions and pages
 * all ask `can(actor, permission)`; a user holding several roles gets the union.
 */
export const ROLES = ['viewer', 'operator', 'reviewer', 'oncall', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export const ROLE_LABELS: Record<Role, string> = {
  viewer: 'viewer',
  operator: 'operator',
  reviewer: 'reviewer',
  oncall: 'on-call',
  admin: 'admin',
};

export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  viewer: 'reads everything',
  operator: 'creates intents, changes status (also in bulk), runs pipeline actions',
  reviewer: 'applies corrections',
  oncall: 'cancels and terminates database backends on the Locks page',
  admin: 'manages users and everyone’s API tokens, runs the contention replay',
};

export const PERMISSIONS = [
  // reading: every role (a console you cannot see is no console)
  'intents.read',
  'locks.read',
  'contention.read',
  'replay.read',
  // own API tokens: every role; a token acts with its owner's roles, so it grants nothing extra
  'tokens.own',
  // operator
  'intents.create',
  'intents.status',
  'intents.bulk',
  'pipeline.run',
  // reviewer
  'intents.correct',
  // on-call
  'locks.cancel',
  'locks.terminate',
  // admin
  'users.manage',
  'tokens.manage',
  'replay.run',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const EVERY_ROLE: readonly Permission[] = ['intents.read', 'locks.read', 'contention.read', 'replay.read', 'tokens.own'];

export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  viewer: EVERY_ROLE,
  operator: [...EVERY_ROLE, 'intents.create', 'intents.status', 'intents.bulk', 'pipeline.run'],
  reviewer: [...EVERY_ROLE, 'intents.correct'],
  oncall: [...EVERY_ROLE, 'locks.cancel', 'locks.terminate'],
  admin: [...EVERY_ROLE, 'users.manage', 'tokens.manage', 'replay.run'],
};

export function permissionsOf(roles: readonly Role[]): Set<Permission> {
  return new Set(roles.flatMap((role) => ROLE_PERMISSIONS[role] ?? []));
}

export function can(actor: { roles: readonly Role[] } | null | undefined, permission: Permission): boolean {
  if (!actor) return false;
  return actor.roles.some((role) => ROLE_PERMISSIONS[role]?.includes(permission));
}

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
