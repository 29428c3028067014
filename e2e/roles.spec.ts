import { expect, test } from './support/test';
import type { Role } from '../lib/auth/permissions';
import { useSessionOf } from './auth';
import { seedIntent, short, uniqueMarker } from './intents-fixtures';

/**
 * Roles (docs/AUTH.md): each role signs in and sees only what it may do. Operators change statuses (one and in bulk),
 * reviewers correct, admins manage users and run the replay, release engineers run the replay and manage no one;
 * everyone reads everything. The server refuses the
 * same things again (test/doors/*.test.ts); here the page must not even offer them.
 */
const MAY = {
  viewer: { status: false, bulk: false, correct: false, replay: false, users: false },
  operator: { status: true, bulk: true, correct: false, replay: false, users: false },
  reviewer: { status: false, bulk: false, correct: true, replay: false, users: false },
  oncall: { status: false, bulk: false, correct: false, replay: false, users: false },
  admin: { status: false, bulk: false, correct: false, replay: true, users: true },
  release: { status: false, bulk: false, correct: false, replay: true, users: false },
} satisfies Record<Role, Record<string, boolean>>;

test('signed out, every console page sends you to sign in', async ({ page }) => {
  for (const path of ['/intents', '/locks', '/contention', '/replay']) {
    await page.goto(path);
    await expect(page).toHaveURL(/\/sign-in\?next=/);
  }
});

for (const [role, may] of Object.entries(MAY) as [Role, (typeof MAY)[Role]][]) {
  test(`${role} sees only what the ${role} role may do`, async ({ page, context, baseURL }) => {
    await useSessionOf(context, baseURL!, [role]);
    const marker = uniqueMarker(`roles-${role}`);
    const intent = await seedIntent('PROCESSED', { marker });

    await page.goto(`/intents?q=${marker}`);
    await expect(page.getByRole('table', { name: 'Intents' })).toContainText(short(intent.id));
    await expect(page.getByRole('checkbox', { name: `Select intent ${short(intent.id)}` })).toHaveCount(may.bulk ? 1 : 0);

    await page.goto(`/intents/${intent.id}`);
    await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
    await expect(page.getByRole('group', { name: 'Status actions' })).toHaveCount(may.status ? 1 : 0);
    await expect(page.getByRole('form', { name: 'Correction' })).toHaveCount(may.correct ? 1 : 0);

    await page.goto('/replay');
    await expect(page.getByRole('heading', { name: 'Replay', level: 1 })).toBeVisible();
    if (may.replay) await expect(page.getByTestId('replay-start')).toBeEnabled();
    else await expect(page.getByTestId('replay-start')).toBeDisabled();

    await expect(page.getByRole('link', { name: 'Users' })).toHaveCount(may.users ? 1 : 0);
    await page.goto('/admin/users');
    if (may.users) await expect(page.getByRole('heading', { name: /Users/, level: 1 })).toBeVisible();
    else await expect(page.getByText(/needs the|not allowed|permission/i).first()).toBeVisible();
  });
}
