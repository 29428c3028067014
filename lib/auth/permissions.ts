/**
 * Roles and what they may do. The table is the single source of truth: route handlers, server actions and pages
 * all ask `can(actor, permission)`; a user holding several roles gets the union.
 */
import { ROLE_LABELS, ROLES, type Role } from '@/lib/shared/roles';

export { ROLE_LABELS, ROLES, type Role } from '@/lib/shared/roles';

export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  viewer: 'reads everything',
  operator: 'creates intents, changes status (also in bulk), runs pipeline actions',
  reviewer: 'applies corrections',
  oncall: 'cancels and terminates database backends on the Locks page',
  admin: 'manages users and everyone’s API tokens, runs the contention replay',
  release: 'runs the contention replay before a rollout (and reads everything), without managing users',
};

export const PERMISSIONS = [
  // reading: every role (a console you cannot see is no console)
  'intents.read',
  'locks.read',
  'contention.read',
  'replay.read',
  'audit.read',
  // own API tokens: every role; a token acts with its owner's roles, so it grants nothing extra
  'tokens.own',
  // operator
  'intents.create',
  'intents.status',
  'intents.bulk',
  'pipeline.run',
  // operator, reviewer, on-call and admin: lease locks (a reviewer's edit lease on the intent being corrected)
  'leases.use',
  // reviewer
  'intents.correct',
  // on-call
  'locks.cancel',
  'locks.terminate',
  // admin
  'users.manage',
  'tokens.manage',
  // admin: release a lease someone else took (the release event names the admin as its actor)
  'leases.release_any',
  // release and admin
  'replay.run',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const EVERY_ROLE: readonly Permission[] = ['intents.read', 'locks.read', 'contention.read', 'replay.read', 'audit.read', 'tokens.own'];

export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  viewer: EVERY_ROLE,
  operator: [...EVERY_ROLE, 'intents.create', 'intents.status', 'intents.bulk', 'pipeline.run', 'leases.use'],
  reviewer: [...EVERY_ROLE, 'intents.correct', 'leases.use'],
  oncall: [...EVERY_ROLE, 'locks.cancel', 'locks.terminate', 'leases.use'],
  admin: [...EVERY_ROLE, 'users.manage', 'tokens.manage', 'replay.run', 'leases.use', 'leases.release_any'],
  // A release engineer presses the replay button on staging and compares runs: nothing else to change. Admin keeps
  // it too (an admin could give themselves any role anyway).
  release: [...EVERY_ROLE, 'replay.run'],
};

/**
 * What each permission lets someone do, as the subject of a sentence ("Creating intents needs …"): people see
 * these, never the permission names, which stay in error details for programs.
 */
export const PERMISSION_ACTIONS: Record<Permission, string> = {
  'intents.read': 'Reading intents',
  'locks.read': 'Viewing locks',
  'contention.read': 'Viewing contention',
  'replay.read': 'Viewing replay runs',
  'audit.read': 'Reading the audit log',
  'tokens.own': 'Managing your own API tokens',
  'intents.create': 'Creating intents',
  'intents.status': 'Changing an intent’s status',
  'intents.bulk': 'Changing statuses in bulk',
  'pipeline.run': 'Running the pipeline and controlling its workers (runs, reruns, retries, pausing claiming)',
  'leases.use': 'Taking, refreshing and releasing leases',
  'intents.correct': 'Applying corrections',
  'locks.cancel': 'Cancelling a database backend',
  'locks.terminate': 'Terminating a database backend',
  'users.manage': 'Managing users',
  'tokens.manage': 'Managing other people’s API tokens',
  'leases.release_any': 'Releasing a lease someone else took',
  'replay.run': 'Starting a contention replay',
};

/** The roles that grant `permission`, in the table's order. */
export function rolesGranting(permission: Permission): Role[] {
  return ROLES.filter((role) => ROLE_PERMISSIONS[role].includes(permission));
}

/** "viewer", "viewer or admin", "viewer, operator or admin". */
function orList(words: string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;
}

/**
 * The refusal people read: what they tried, which role(s) would allow it, and what they hold, e.g.
 * "Creating intents needs the operator role (you have: viewer)."
 */
export function permissionDeniedMessage(permission: Permission, held?: readonly Role[]): string {
  const granting = rolesGranting(permission).map((r) => ROLE_LABELS[r]);
  const needs = granting.length === 1 ? `the ${granting[0]} role` : `one of the ${orList(granting)} roles`;
  const has = held === undefined ? '' : held.length === 0 ? ' (you have no roles)' : ` (you have: ${held.map((r) => ROLE_LABELS[r] ?? r).join(', ')})`;
  return `${PERMISSION_ACTIONS[permission]} needs ${needs}${has}.`;
}

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
