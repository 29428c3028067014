import { randomBytes } from 'node:crypto';
import { expect, type BrowserContext, type Page } from '@playwright/test';
import { sessionCookieName } from '../lib/auth/cookies';
import type { Role } from '../lib/auth/permissions';
import { createSession } from '../lib/auth/sessions';
import { generateApiToken, storeApiToken } from '../lib/auth/tokens';
import { insertUser } from '../lib/auth/users';

/**
 * Signing in for browser tests. Users are created through the same domain function the console uses, in the
 * database the server under test uses (DATABASE_URL must be set in the Playwright process, as for any seeding),
 * with a unique name per call so parallel tests never share an account.
 *
 * - `signInAs(page, roles)`: creates a user and signs in through the sign-in form, as a person would.
 * - `useSessionOf(context, baseURL, roles)`: creates a user and a session directly and sets the cookie: fast, for
 *   tests that are not about signing in.
 * - `apiTokenFor(roles)`: a Bearer token for API calls (`request.post(url, { headers: { authorization } })`).
 */
export const E2E_PASSWORD = 'e2e password that is long enough';

export type E2eUser = { username: string; password: string; userId: string; roles: Role[] };

export async function createE2eUser(roles: Role[], options: { username?: string; mustChangePassword?: boolean } = {}): Promise<E2eUser> {
  const username = options.username ?? `e2e-${roles.join('-') || 'none'}-${randomBytes(4).toString('hex')}`.slice(0, 64);
  const user = await insertUser({ username, roles, password: E2E_PASSWORD, mustChangePassword: options.mustChangePassword ?? false, createdBy: 'e2e' });
  return { username, password: E2E_PASSWORD, userId: user.id, roles };
}

/** Signs in through the form and waits until the console has let the user in. */
export async function signInThroughForm(page: Page, user: { username: string; password: string }, next = '/'): Promise<void> {
  await page.goto(`/sign-in?next=${encodeURIComponent(next)}`);
  await page.getByLabel('Username').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).not.toHaveURL(/\/sign-in/);
}

export async function signInAs(page: Page, roles: Role[], next = '/'): Promise<E2eUser> {
  const user = await createE2eUser(roles);
  await signInThroughForm(page, user, next);
  return user;
}

/** Puts a fresh session cookie for a new user with `roles` into the browser context (no page visit needed). */
export async function useSessionOf(context: BrowserContext, baseURL: string, roles: Role[]): Promise<E2eUser> {
  const user = await createE2eUser(roles);
  const { secret, session } = await createSession(user.userId, { userAgent: 'playwright' });
  const url = new URL(baseURL);
  const secure = sessionCookieName() !== 'bc_session';
  await context.addCookies([
    { name: sessionCookieName(), value: secret, domain: url.hostname, path: '/', httpOnly: true, secure, sameSite: 'Lax', expires: Math.floor(session.absoluteExpiresAt.getTime() / 1000) },
  ]);
  return user;
}

export async function apiTokenFor(roles: Role[]): Promise<{ user: E2eUser; token: string; authorization: string }> {
  const user = await createE2eUser(roles);
  const token = generateApiToken();
  await storeApiToken({ userId: user.userId, name: 'e2e', token, createdBy: 'e2e' });
  return { user, token, authorization: `Bearer ${token}` };
}
