import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Role } from '@/lib/auth/permissions';
import { resetAuth, userWithSession } from '../auth-helpers';
import { makeIntent, resetDatabase } from '../helpers';
import { request, resetRequest, SAME_ORIGIN } from '../next-request';

/**
 * The authorization matrix (docs/AUTH.md) for the server actions: every action × every role × signed out. Actions read
 * the session through Next's `cookies()`, which only exists inside a Next request; here it is answered from the
 * cookie of the user the case signs in as (test/next-request.ts), and everything behind it (sessions, roles, the domain)
 * is real.
 */
vi.mock('next/headers', () => import('../next-request').then((m) => m.nextHeaders));
vi.mock('next/cache', () => import('../next-request').then((m) => m.nextCache));
vi.mock('next/navigation', () => import('../next-request').then((m) => m.nextNavigation));

const { changeIntentStatusAction, bulkChangeStatusAction, correctIntentAction } = await import('@/app/actions/intents');
const { cancelBackendAction, terminateBackendAction, unblockImpactAction } = await import('@/app/actions/locks');
const { startReplayAction, cancelReplayAction, setReplayBaselineAction } = await import('@/app/actions/replay');
const { createUserAction, setRolesAction, setDisabledAction, resetPasswordAction } = await import('@/app/actions/users');
const { createTokenAction, revokeTokenAction } = await import('@/app/actions/tokens');
const { takeEditLeaseAction, renewEditLeaseAction, releaseEditLeaseAction, currentEditLeaseAction } = await import('@/app/actions/leases');

const form = (fields: Record<string, string | string[]>) => {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) for (const item of [v].flat()) data.append(k, item);
  return data;
};

/** The code an action's result carries when it failed, whatever the result's shape; undefined on success. */
function codeOf(result: unknown): string | undefined {
  const r = result as { ok?: boolean; error?: { code?: string } | string; status?: string; code?: string };
  if (r.ok === false && typeof r.error === 'object') return r.error.code;
  if (r.status === 'error' || typeof r.error === 'string') return r.code ?? 'error';
  return undefined;
}

type Case = { name: string; roles: Role[]; call: (intentId: string) => Promise<unknown> };

// Who may: written from the role list of docs/AUTH.md (operator: status and bulk; reviewer: corrections; on-call:
// cancel/terminate backends; admin: users, tokens, replay; release: replay), not read from the permission table.
const CASES: Case[] = [
  { name: 'changeIntentStatusAction', roles: ['operator'], call: (id) => changeIntentStatusAction({ id, status: 'PROCESSED' }) },
  { name: 'bulkChangeStatusAction', roles: ['operator'], call: (id) => bulkChangeStatusAction({ ids: [id], status: 'PROCESSED' }) },
  { name: 'correctIntentAction', roles: ['reviewer'], call: (id) => correctIntentAction({ id, diff: { checked: true }, source: 'matrix', reason: 'matrix' }) },
  { name: 'unblockImpactAction', roles: ['oncall'], call: () => unblockImpactAction(2_000_000_000) },
  { name: 'cancelBackendAction', roles: ['oncall'], call: () => cancelBackendAction({ status: 'idle' }, form({ pid: '2000000000', reason: 'matrix' })) },
  { name: 'terminateBackendAction', roles: ['oncall'], call: () => terminateBackendAction({ status: 'idle' }, form({ pid: '2000000000', reason: 'matrix' })) },
  // An unknown scenario: an allowed caller gets past the door and is refused by validation, so no run starts.
  { name: 'startReplayAction', roles: ['admin', 'release'], call: () => startReplayAction({ scenarios: ['no-such-scenario'] }) },
  { name: 'cancelReplayAction', roles: ['admin', 'release'], call: () => cancelReplayAction('00000000-0000-0000-0000-000000000000') },
  // A run that does not exist: an allowed caller gets past the door and is answered 404, so nothing is pinned.
  { name: 'setReplayBaselineAction', roles: ['admin', 'release'], call: () => setReplayBaselineAction({ id: '00000000-0000-0000-0000-000000000000', pinned: true }) },
  { name: 'createUserAction', roles: ['admin'], call: () => createUserAction({ status: 'idle' }, form({ username: `m-${Math.random().toString(36).slice(2, 10)}`, roles: ['viewer'] })) },
  { name: 'setRolesAction', roles: ['admin'], call: () => setRolesAction({ status: 'idle' }, form({ userId: '00000000-0000-0000-0000-000000000000', roles: ['viewer'] })) },
  { name: 'setDisabledAction', roles: ['admin'], call: () => setDisabledAction({ status: 'idle' }, form({ userId: '00000000-0000-0000-0000-000000000000', disabled: 'true' })) },
  { name: 'resetPasswordAction', roles: ['admin'], call: () => resetPasswordAction({ status: 'idle' }, form({ userId: '00000000-0000-0000-0000-000000000000' })) },
  // Every signed-in role manages its own tokens.
  { name: 'createTokenAction', roles: ['viewer', 'operator', 'reviewer', 'oncall', 'admin', 'release'], call: () => createTokenAction({ status: 'idle' }, form({ name: 'matrix' })) },
  { name: 'revokeTokenAction', roles: ['viewer', 'operator', 'reviewer', 'oncall', 'admin', 'release'], call: () => revokeTokenAction({ status: 'idle' }, form({ tokenId: '00000000-0000-0000-0000-000000000000' })) },
  // Edit leases: every role that may take leases (operator and above, reviewers for their corrections); all may look.
  { name: 'takeEditLeaseAction', roles: ['operator', 'reviewer', 'oncall', 'admin'], call: (id) => takeEditLeaseAction({ intentId: id }) },
  { name: 'renewEditLeaseAction', roles: ['operator', 'reviewer', 'oncall', 'admin'], call: (id) => renewEditLeaseAction({ intentId: id, token: 1 }) },
  { name: 'releaseEditLeaseAction', roles: ['operator', 'reviewer', 'oncall', 'admin'], call: (id) => releaseEditLeaseAction({ intentId: id, token: 1 }) },
  { name: 'currentEditLeaseAction', roles: ['viewer', 'operator', 'reviewer', 'oncall', 'admin', 'release'], call: (id) => currentEditLeaseAction({ intentId: id }) },
];
const ROLES: Role[] = ['viewer', 'operator', 'reviewer', 'oncall', 'admin', 'release'];
let cookies: Record<Role, string>;

beforeAll(async () => {
  await resetDatabase();
  await resetAuth();
  cookies = {} as typeof cookies;
  for (const role of ROLES) cookies[role] = (await userWithSession([role])).cookie;
});
const HEADERS = { ...SAME_ORIGIN, 'x-forwarded-for': '127.0.0.1' };
beforeEach(() => resetRequest(HEADERS));
afterAll(() => resetRequest());

describe.each(CASES)('$name', (c) => {
  it('refuses a signed-out caller', async () => {
    const intent = await makeIntent('NORMALIZED');
    expect(codeOf(await c.call(intent.id))).toBe('unauthenticated');
  });

  it.each(ROLES)('as %s', async (role) => {
    const intent = await makeIntent('NORMALIZED');
    request.cookie = cookies[role];
    const code = codeOf(await c.call(intent.id));
    if (c.roles.includes(role)) expect(['unauthenticated', 'forbidden']).not.toContain(code);
    else expect(code).toBe('forbidden');
  });
});

describe('the intent actions act as the signed-in user', () => {
  it('an allowed status change is audited under the user; a name in the input is refused, not used', async () => {
    const intent = await makeIntent('NORMALIZED');
    request.cookie = cookies.operator;
    const named = await changeIntentStatusAction({ id: intent.id, status: 'PROCESSED', actor: 'someone-else' });
    expect(codeOf(named)).toBe('invalid_request');
    expect(JSON.stringify(named)).toContain('actor');
    const result = await changeIntentStatusAction({ id: intent.id, status: 'PROCESSED' });
    expect(codeOf(result)).toBeUndefined();
    const { db } = await import('@/lib/db/client');
    const rows = await db().$queryRaw<{ actor: string }[]>`SELECT actor FROM audit_events WHERE intent_id = ${intent.id}::uuid AND action = 'status_change' AND to_status = 'PROCESSED'`;
    expect(rows.map((r) => r.actor)).toEqual([expect.stringMatching(/^t-operator-/)]);
  });
});

describe('the console asks for a reason on status changes', () => {
  it('refuses FAILED without one (naming the field, changing nothing), single and bulk', async () => {
    const intent = await makeIntent('NORMALIZED');
    request.cookie = cookies.operator;
    for (const result of [
      await changeIntentStatusAction({ id: intent.id, status: 'FAILED', reason: '  ' }),
      await bulkChangeStatusAction({ ids: [intent.id], status: 'FAILED' }),
    ]) {
      expect(codeOf(result)).toBe('invalid_request');
      expect((result as { error: { details: { fields: { field: string }[] } } }).error.details.fields[0].field).toBe('reason');
    }
    const { intentRow } = await import('../helpers');
    expect((await intentRow(intent.id)).status).toBe('NORMALIZED');
  });

  it('accepts FAILED with a reason and other moves without one', async () => {
    const a = await makeIntent('NORMALIZED');
    const b = await makeIntent('NORMALIZED');
    request.cookie = cookies.operator;
    expect(codeOf(await changeIntentStatusAction({ id: a.id, status: 'FAILED', reason: 'card declined' }))).toBeUndefined();
    expect(codeOf(await changeIntentStatusAction({ id: b.id, status: 'PROCESSED' }))).toBeUndefined();
  });
});

describe('a bulk change with a reason', () => {
  it('is accepted (the reason goes to the engine when its command takes one)', async () => {
    const intent = await makeIntent('NORMALIZED');
    request.cookie = cookies.operator;
    expect(codeOf(await bulkChangeStatusAction({ ids: [intent.id], status: 'FAILED', reason: 'partner outage' }))).toBeUndefined();
    expect(codeOf(await bulkChangeStatusAction({ ids: [(await makeIntent('NORMALIZED')).id], status: 'PROCESSED', reason: '' }))).toBeUndefined();
  });
});
