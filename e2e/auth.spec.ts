import { randomBytes } from 'node:crypto';
import { expect, test } from '@playwright/test';
import { createE2eUser, signInAs, signInThroughForm, useSessionOf } from './auth';

/**
 * Sign-in, one-time passwords, the users page and API tokens, in a real browser against a production build.
 * Users are seeded through the domain (e2e/auth.ts), so the Playwright process needs DATABASE_URL.
 */
test('a signed-out visitor is sent to sign in, and a refused sign-in keeps the username', async ({ page }) => {
  await page.goto('/admin/users');
  await expect(page).toHaveURL(/\/sign-in\?next=%2Fadmin%2Fusers$/);
  await page.getByLabel('Username').fill('nobody-here');
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByText('The username or password is not correct.')).toBeVisible();
  await expect(page.getByLabel('Username')).toHaveValue('nobody-here');
});

test('an admin creates a user, who signs in with the one-time password and must choose their own', async ({ page, browser }) => {
  await signInAs(page, ['admin'], '/admin/users');
  const username = `e2e-new-${randomBytes(3).toString('hex')}`;
  const form = page.getByTestId('create-user');
  await form.getByLabel('Username').fill(username);
  await form.getByRole('checkbox', { name: 'reviewer' }).check();
  await form.getByRole('button', { name: 'Create user' }).click();
  const revealed = page.getByTestId('revealed-secret');
  await expect(revealed).toContainText(`One-time password for ${username}`);
  const oneTimePassword = (await revealed.locator('code').textContent())!.trim();
  await expect(page.getByTestId(`user-${username}`)).toContainText('one-time password');

  const theirs = await browser.newContext();
  const them = await theirs.newPage();
  await them.goto('/sign-in');
  await them.getByLabel('Username').fill(username);
  await them.getByLabel('Password').fill(oneTimePassword);
  await them.getByRole('button', { name: 'Sign in' }).click();
  await expect(them).toHaveURL(/\/account\/password$/);
  // Until the password is changed, every other page sends them back here.
  await them.goto('/account/tokens');
  await expect(them).toHaveURL(/\/account\/password$/);
  await them.getByLabel('Current password').fill(oneTimePassword);
  await them.getByLabel(/^New password \(at least/).fill('my own password, long enough');
  await them.getByLabel('New password again').fill('my own password, long enough');
  await them.getByRole('button', { name: 'Change password' }).click();
  await expect(them).not.toHaveURL(/\/account\/password$/);
  await them.goto('/account/tokens');
  await expect(them.getByRole('heading', { name: 'API tokens' })).toBeVisible();
  await theirs.close();
});

test('a viewer may not open the users page, and manages their own API tokens, each shown once', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/admin/users');
  await expect(page.getByRole('heading', { name: 'Not allowed' })).toBeVisible();

  await page.goto('/account/tokens');
  const form = page.getByTestId('create-token');
  await form.getByLabel('Name (what uses it)').fill('nightly export');
  await form.getByRole('button', { name: 'Create token' }).click();
  const token = (await page.getByTestId('revealed-secret').locator('code').textContent())!.trim();
  expect(token).toMatch(/^bc_[A-Za-z0-9_-]{43}$/);
  await page.reload();
  await expect(page.getByText(token)).toHaveCount(0);
  const row = page.getByTestId(`token-${token.slice(0, 11)}`);
  await expect(row).toContainText('nightly export');
  page.once('dialog', (dialog) => void dialog.accept());
  await row.getByRole('button', { name: 'Revoke' }).click();
  await expect(row).toContainText('revoked');
});

test('sign-in only redirects within the console', async ({ page, baseURL }) => {
  const user = await createE2eUser(['operator']);
  await signInThroughForm(page, user, '//evil.example/steal');
  expect(new URL(page.url()).origin).toBe(new URL(baseURL!).origin);
});
