/**
 * The roles' names, as stored and as people read them. What each may do is lib/auth/permissions.ts; the names live
 * here, below it, so that whatever writes about users (the audit log's descriptions) names roles as the pages do.
 */
export const ROLES = ['viewer', 'operator', 'reviewer', 'oncall', 'admin', 'release'] as const;
export type Role = (typeof ROLES)[number];

export const ROLE_LABELS: Record<Role, string> = {
  viewer: 'viewer',
  operator: 'operator',
  reviewer: 'reviewer',
  oncall: 'on-call',
  admin: 'admin',
  release: 'release',
};

/** A role as people read it ("on-call"); a name that is no role (an older record's) as it was stored. */
export const roleLabel = (name: string): string => (ROLES as readonly string[]).includes(name) ? ROLE_LABELS[name as Role] : name;
