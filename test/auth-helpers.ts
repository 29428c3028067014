import { randomBytes } from 'node:crypto';
import { db } from '@/lib/db/client';
import { sessionCookieName } from '@/lib/auth/cookies';
import { ROLES, type Role } from '@/lib/auth/permissions';
import { createSession } from '@/lib/auth/sessions';
import { generateApiToken, storeApiToken } from '@/lib/auth/tokens';
import type { AuthActor, UserView } from '@/lib/auth/types';
import { insertUser } from '@/lib/auth/users';

/**
 * Test helpers for signed-in callers: real users, real sessions and real API tokens in the test database (no
 * stubbed auth), so a test exercises exactly what a client would.
 */
export const ALL_ROLES: readonly Role[] = ROLES;
export const TEST_PASSWORD = 'correct horse battery staple';
export const BASE_URL = 'http://localhost:3000';

/** Empties the auth tables (TRUNCATE fires no row triggers, so the append-only auth_events allows it). */
export async function resetAuth(): Promise<void> {
  await db().$executeRaw`TRUNCATE users, sessions, api_tokens, sign_in_attempts, auth_events RESTART IDENTITY CASCADE`;
}

let counter = 0;
function uniqueName(roles: readonly Role[]): string {
  counter += 1;
  return `t-${roles.join('-') || 'none'}-${counter}-${randomBytes(3).toString('hex')}`.slice(0, 64);
}

export type TestUser = { user: UserView; password: string };

export async function makeUser(
  roles: readonly Role[],
  options: { username?: string; password?: string; mustChangePassword?: boolean; disabled?: boolean } = {},
): Promise<TestUser> {
  const password = options.password ?? TEST_PASSWORD;
  const user = await insertUser({ username: options.username ?? uniqueName(roles), roles: [...roles], password, mustChangePassword: options.mustChangePassword ?? false, createdBy: 'test' });
  if (options.disabled) await db().user.update({ where: { id: user.id }, data: { disabled: true } });
  return { user: { ...user, disabled: options.disabled ?? false }, password };
}

/** A user holding `roles` and a live API token: `authorization` is the header value to send. */
export async function userWithToken(roles: readonly Role[], options: Parameters<typeof makeUser>[1] = {}) {
  const made = await makeUser(roles, options);
  const token = generateApiToken();
  const record = await storeApiToken({ userId: made.user.id, name: 'test', token, createdBy: 'test' });
  return { ...made, token, tokenId: record.id, authorization: `Bearer ${token}` };
}

/** A user holding `roles` and a live session: `cookie` is the Cookie header value to send. */
export async function userWithSession(roles: readonly Role[], options: Parameters<typeof makeUser>[1] = {}) {
  const made = await makeUser(roles, options);
  const { secret, session } = await createSession(made.user.id, { ip: '127.0.0.1', userAgent: 'vitest' });
  return { ...made, secret, session, cookie: `${sessionCookieName()}=${secret}` };
}

/** The actor a domain command would receive for this user (as if it had come through a door). */
export function actorOf(user: UserView, via: AuthActor['via'] = 'token'): AuthActor {
  return { name: user.username, userId: user.id, roles: user.roles, via, credentialId: 'test', mustChangePassword: user.mustChangePassword };
}

/**
 * A Request as a client would send it. `token` adds the Bearer header; `cookie` adds the session cookie and, for
 * writes, `sameOrigin` (default true) adds the Origin and Sec-Fetch-Site a browser on the console's page sends.
 */
export function apiRequest(
  path: string,
  init: { method?: string; body?: unknown; token?: string; cookie?: string; sameOrigin?: boolean; headers?: Record<string, string> } = {},
): Request {
  const method = init.method ?? (init.body === undefined ? 'GET' : 'POST');
  const headers = new Headers(init.headers);
  if (init.token) headers.set('authorization', `Bearer ${init.token}`);
  if (init.cookie) {
    headers.set('cookie', init.cookie);
    if ((init.sameOrigin ?? true) && method !== 'GET' && method !== 'HEAD') {
      headers.set('origin', new URL(BASE_URL).origin);
      headers.set('sec-fetch-site', 'same-origin');
    }
  }
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  }
  return new Request(new URL(path, BASE_URL), { method, headers, body });
}
