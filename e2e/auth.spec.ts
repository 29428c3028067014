import { randomBytes } from 'node:crypto';
import { expect, scriptlessContext, test } from './support/test';
import { THEME_COOKIE } from '../lib/console/theme';
import { createE2eUser, signInAs, signInThroughForm, useSessionOf } from './auth';

/**
 * Sign-in, one-time passwords, the users page and API tokens, in a real browser against a production build.
 * Users are seeded through the domain (e2e/auth.ts), so the Playwright process needs DATABASE_URL.
 */
test('a signed-out visitor is sent to sign in, and a refused sign-in keeps the username', async ({ page }) => {
  await page.goto('/admin/users');
  await expect(page).toHaveURL(/\/sign-in\?next=%2Fadmin%2Fusers$/);
  // Signed out, the navigation offers only what is open to anyone: the references.
  const links = page.getByRole('navigation', { name: 'Main' }).getByRole('link');
  await expect(links).toHaveCount(2);
  // By the names people hear and read (a narrow window shows them shorter).
  await expect(links.nth(0)).toHaveAccessibleName('API reference');
  await expect(links.nth(1)).toHaveAccessibleName('Events reference');
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
  // The list is a page at a time: the search finds the new user, and says how many match.
  await page.getByRole('search', { name: 'Find users' }).getByLabel('Username contains').fill(username);
  await page.getByRole('search', { name: 'Find users' }).getByRole('button', { name: 'Find' }).click();
  await expect(page).toHaveURL(new RegExp(`/admin/users\\?q=${username}$`));
  await expect(page.getByTestId('users-shown')).toHaveText(`1 of 1 user whose name contains “${username}”`);
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

test('before the page’s code has loaded, a password change is posted to the server and never lands in the address', async ({ browser }) => {
  const user = await createE2eUser(['viewer'], { mustChangePassword: true });
  const newPassword = `no scripts ${randomBytes(6).toString('hex')} long enough`;
  const context = await scriptlessContext(browser);
  const page = await context.newPage();
  const sent: string[] = [];
  page.on('request', (request) => sent.push(`${request.method()} ${request.url()}`));

  await page.goto('/sign-in');
  // Without JavaScript, every page says what works without it and what does not.
  await expect(page.getByRole('alert').filter({ hasText: 'This console needs JavaScript' })).toBeVisible();
  await page.getByLabel('Username').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/account\/password$/);
  await page.getByLabel('Current password').fill(user.password);
  await page.getByLabel(/^New password \(at least/).fill(newPassword);
  await page.getByLabel('New password again').fill(newPassword);
  await page.getByRole('button', { name: 'Change password' }).click();
  await expect(page).not.toHaveURL(/\/account\/password/);
  // Neither password was ever part of an address: the browser's default for a form, a GET, would have sent both.
  for (const request of sent) {
    expect(request).not.toContain(encodeURIComponent(newPassword).replace(/%20/g, '+'));
    expect(request).not.toContain(encodeURIComponent(user.password).replace(/%20/g, '+'));
  }
  await context.close();

  // The change was made: the new password signs in, straight into the console.
  const again = await browser.newContext();
  const theirs = await again.newPage();
  await signInThroughForm(theirs, { username: user.username, password: newPassword });
  await expect(theirs).not.toHaveURL(/\/account\/password/);
  await again.close();
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
  // The console's own dialog, not the browser's: it says what will happen, and Escape backs out.
  await row.getByRole('button', { name: 'Revoke' }).click();
  const dialog = page.getByRole('dialog', { name: 'Revoke “nightly export”?' });
  await expect(dialog).toContainText(`Every client sending ${token.slice(0, 11)}… is refused (401) from now on`);
  await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(row).not.toContainText('revoked');
  await row.getByRole('button', { name: 'Revoke' }).click();
  await dialog.getByRole('button', { name: 'Revoke token' }).click();
  await expect(dialog).toBeHidden();
  await expect(row).toContainText('revoked');
});

test('sign-in only redirects within the console', async ({ page, baseURL }) => {
  const user = await createE2eUser(['operator']);
  await signInThroughForm(page, user, '//evil.example/steal');
  expect(new URL(page.url()).origin).toBe(new URL(baseURL!).origin);
});

// Written as they would arrive in a link: already percent-encoded where an attacker would encode them.
const HOSTILE_NEXT = [
  '%2F%09%2Fevil.example',
  '%2F%0A%2Fevil.example',
  '%2F%0D%0A%2Fevil.example',
  '%2F%5Cevil.example',
  '%5C%5Cevil.example',
  '%2F%2Fevil.example',
  '%2F%252F%252Fevil.example',
  'https%3A%2F%2Fevil.example',
  '%2F%E2%80%A8%2Fevil.example',
  '%20%2F%2Fevil.example',
  'javascript%3Aalert(1)',
  '%2F%00%2Fevil.example',
];

test('sign-in with hostile next values never leaves the console, signing in or already signed in', async ({ page, baseURL }) => {
  // A dozen real sign-ins (argon2 on a shared machine): more than the default minute.
  test.setTimeout(240_000);
  const origin = new URL(baseURL!).origin;
  const left: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.origin !== origin && url.protocol !== 'data:' && url.protocol !== 'blob:') left.push(request.url());
  });
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame() && new URL(frame.url()).origin !== origin) left.push(frame.url());
  });
  const user = await createE2eUser(['viewer']);
  for (const [i, next] of HOSTILE_NEXT.entries()) {
    await page.context().clearCookies();
    await page.goto(`/sign-in?next=${next}`);
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page).not.toHaveURL(/\/sign-in/);
    expect(new URL(page.url()).origin, `after signing in with next=${next}`).toBe(origin);
    // Signed in, the sign-in page redirects at once: the same rule applies there.
    await page.goto(`/sign-in?next=${HOSTILE_NEXT[(i + 1) % HOSTILE_NEXT.length]}`);
    await page.waitForLoadState('load');
    expect(new URL(page.url()).origin).toBe(origin);
  }
  expect(left).toEqual([]);
});

test('creating a user: the username rule is stated beside the field, and no roles or a bad name are refused in words', async ({ page }) => {
  await signInAs(page, ['admin'], '/admin/users');
  const form = page.getByTestId('create-user');
  const username = form.getByLabel('Username');
  await expect(username).toHaveAccessibleDescription(/2 to 64 characters: letters a–z, digits, dot, underscore or hyphen/);

  const name = `e2e-noroles-${randomBytes(3).toString('hex')}`;
  await username.fill(name);
  await form.getByRole('checkbox', { name: 'viewer', exact: true }).uncheck();
  await form.getByRole('button', { name: 'Create user' }).click();
  await expect(form.getByRole('group', { name: 'Roles' }).getByRole('alert')).toHaveText('must include at least one role (viewer, to read everything and change nothing)');
  await expect(username).toHaveValue(name);
  await expect(page.getByTestId(`user-${name}`)).toHaveCount(0);

  await username.fill('bad name!');
  await form.getByRole('checkbox', { name: 'viewer', exact: true }).check();
  await form.getByRole('button', { name: 'Create user' }).click();
  await expect(form.getByRole('alert')).toHaveText(/^may not contain a space, "!": use 2 to 64 characters/);
  await expect(username).toHaveAccessibleDescription(/may not contain a space/);
  await expect(username).toHaveValue('bad name!');
});

test('users page: a refused role change shows the saved roles again, and nothing refused is offered on yourself', async ({ page }) => {
  const me = await signInAs(page, ['admin'], '/admin/users');
  const target = await createE2eUser(['operator']);
  await page.goto(`/admin/users?q=${target.username}`);
  const row = page.getByTestId(`user-${target.username}`);
  const roles = row.getByRole('form', { name: `Roles of ${target.username}` });
  await roles.getByRole('checkbox', { name: 'operator' }).uncheck();
  await roles.getByRole('button', { name: 'Save roles' }).click();
  await expect(roles.getByRole('alert')).toContainText('must include at least one role');
  // The form shows what is saved, not what was refused.
  await expect(roles.getByRole('checkbox', { name: 'operator' })).toBeChecked();
  await roles.getByRole('checkbox', { name: 'reviewer' }).check();
  await roles.getByRole('button', { name: 'Save roles' }).click();
  await expect(roles.getByRole('status')).toHaveText(`${target.username}: roles saved.`);

  await page.goto(`/admin/users?q=${me.username}`);
  const mine = page.getByTestId(`user-${me.username}`);
  await expect(mine).toContainText('(you)');
  await expect(mine.getByRole('button', { name: 'Disable' })).toHaveCount(0);
  await expect(mine.getByRole('button', { name: 'Reset password' })).toHaveCount(0);
  await expect(mine.getByRole('link', { name: 'Change your password' })).toBeVisible();
});

test('users page: Disable and Reset password ask in the console’s dialog, saying what will happen', async ({ page }) => {
  await signInAs(page, ['admin'], '/admin/users');
  const target = await createE2eUser(['viewer']);
  await page.goto(`/admin/users?q=${target.username}`);
  const row = page.getByTestId(`user-${target.username}`);
  let browserDialogs = 0;
  page.on('dialog', (d) => {
    browserDialogs += 1;
    void d.dismiss();
  });

  await row.getByRole('button', { name: 'Disable' }).click();
  const disable = page.getByRole('dialog', { name: `Disable ${target.username}?` });
  await expect(disable).toContainText('signed out of every session at once, their API tokens stop working');
  await expect(disable.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(disable).toBeHidden();
  await expect(row).not.toContainText('disabled');
  await row.getByRole('button', { name: 'Disable' }).click();
  await disable.getByRole('button', { name: `Disable ${target.username}` }).click();
  await expect(disable).toBeHidden();
  await expect(row.getByRole('button', { name: 'Enable' })).toBeVisible();

  await row.getByRole('button', { name: 'Reset password' }).click();
  const reset = page.getByRole('dialog', { name: `Reset ${target.username}’s password?` });
  await expect(reset).toContainText('Their current password stops working and they are signed out everywhere');
  await reset.getByRole('button', { name: 'Reset password' }).click();
  await expect(row.getByTestId('revealed-secret')).toContainText(`New one-time password for ${target.username}`);
  expect(browserDialogs).toBe(0);
});

for (const theme of ['light', 'dark'] as const) {
  test(`users and API tokens pages at 1366×768, ${theme}`, async ({ page, context, baseURL }) => {
    await context.addCookies([{ name: THEME_COOKIE, value: theme, url: baseURL! }]);
    await page.setViewportSize({ width: 1366, height: 768 });
    await signInAs(page, ['admin'], '/admin/users');
    await page.screenshot({ path: `test-results/screenshots/users-${theme}.png` });
    await page.goto('/account/tokens');
    await page.getByTestId('create-token').getByLabel('Name (what uses it)').fill('screenshot');
    await page.getByTestId('create-token').getByRole('button', { name: 'Create token' }).click();
    await expect(page.getByTestId('revealed-secret')).toBeVisible();
    await page.screenshot({ path: `test-results/screenshots/tokens-${theme}.png` });
    await page.getByRole('button', { name: 'Revoke' }).first().click();
    await expect(page.getByRole('dialog')).toBeVisible();
    await page.screenshot({ path: `test-results/screenshots/tokens-revoke-${theme}.png` });
  });
}
