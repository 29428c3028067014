import { describe, expect, it } from 'vitest';
import { can, PERMISSION_ACTIONS, permissionDeniedMessage, PERMISSIONS, permissionsOf, rolesGranting, ROLES, type Permission, type Role } from '@/lib/auth/permissions';

/** The role table of docs/AUTH.md, written out permission by permission: the code's table must match it exactly. */
const READS: Permission[] = ['intents.read', 'locks.read', 'contention.read', 'replay.read', 'audit.read', 'tokens.own'];
const EXPECTED: Record<Role, Permission[]> = {
  viewer: READS,
  operator: [...READS, 'intents.create', 'intents.status', 'intents.bulk', 'pipeline.run', 'leases.use'],
  reviewer: [...READS, 'intents.correct', 'leases.use'],
  oncall: [...READS, 'locks.cancel', 'locks.terminate', 'leases.use'],
  admin: [...READS, 'users.manage', 'tokens.manage', 'replay.run', 'leases.use', 'leases.release_any'],
  release: [...READS, 'replay.run'],
};

describe('permission table', () => {
  for (const role of ROLES) {
    for (const permission of PERMISSIONS) {
      const allowed = EXPECTED[role].includes(permission);
      it(`${role} ${allowed ? 'may' : 'may not'} ${permission}`, () => {
        expect(can({ roles: [role] }, permission)).toBe(allowed);
      });
    }
  }

  it('gives a user with several roles the union', () => {
    const roles: Role[] = ['reviewer', 'oncall'];
    expect([...permissionsOf(roles)].sort()).toEqual([...new Set([...EXPECTED.reviewer, ...EXPECTED.oncall])].sort());
    expect(can({ roles }, 'intents.correct')).toBe(true);
    expect(can({ roles }, 'locks.terminate')).toBe(true);
    expect(can({ roles }, 'intents.status')).toBe(false);
  });

  it('denies everything to nobody and to a user with no roles', () => {
    for (const permission of PERMISSIONS) {
      expect(can(null, permission)).toBe(false);
      expect(can(undefined, permission)).toBe(false);
      expect(can({ roles: [] }, permission)).toBe(false);
    }
  });

  it('ignores role names it does not know', () => {
    expect(can({ roles: ['superuser' as Role] }, 'intents.read')).toBe(false);
  });

  it('words refusals by role, never by permission name', () => {
    expect(permissionDeniedMessage('intents.create', ['viewer'])).toBe('Creating intents needs the operator role (you have: viewer).');
    expect(permissionDeniedMessage('users.manage', [])).toBe('Managing users needs the admin role (you have no roles).');
    expect(permissionDeniedMessage('locks.read', ['operator'])).toBe('Viewing locks needs one of the viewer, operator, reviewer, on-call, admin or release roles (you have: operator).');
    expect(permissionDeniedMessage('replay.run', ['viewer'])).toBe('Starting a contention replay needs one of the admin or release roles (you have: viewer).');
    for (const permission of PERMISSIONS) {
      expect(PERMISSION_ACTIONS[permission]).toBeTruthy();
      expect(rolesGranting(permission)).toEqual(ROLES.filter((r) => EXPECTED[r].includes(permission)));
      expect(permissionDeniedMessage(permission, ['viewer'])).not.toContain(permission);
    }
  });
});
