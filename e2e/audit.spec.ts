import { expect, test, type Browser } from './support/test';
import type { Role } from '../lib/auth/permissions';
import { recordAuthEvent } from '../lib/auth/events';
import { useSessionOf, useSessionOf as sessionFor } from './auth';
import { screenshot, seedIntent, short, uniqueMarker } from './intents-fixtures';
import { expectConsoleFields } from './support/console-fields';

/**
 * Reasons on status changes and the global audit page, against a production build: marking an intent FAILED asks
 * for a reason (the confirm button waits for one), the reason is in the intent's timeline and on the audit page,
 * and the audit page's filters are the URL — a copied link opens the same view, for every role.
 */
test('FAILED needs a reason; the reason shows in the timeline and on the audit page, filtered by a shareable URL', async ({ page, context, baseURL }) => {
  const marker = uniqueMarker('audit');
  const intent = await seedIntent('PROCESSED', { order: marker, amount: 12.5 });
  const operator = await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents/${intent.id}`);

  await page.getByRole('button', { name: 'Mark as FAILED' }).click();
  const dialog = page.getByRole('dialog');
  const confirm = dialog.getByRole('button', { name: 'Mark as FAILED' });
  await expect(confirm).toBeDisabled();
  await dialog.getByTestId('confirm-reason').fill(`card declined ${marker}`);
  await expect(confirm).toBeEnabled();
  await confirm.click();
  await expect(page.getByTestId('intent-status')).toHaveText('FAILED');

  // The reason is kept in the audit: on the intent's timeline and on the audit page.
  await expect(page.locator('[data-testid="timeline-entry"][data-kind="status_change"]').first()).toContainText(`card declined ${marker}`);
  await page.goto(`/audit?intent=${intent.id}&action=status_change`);
  const row = page.getByTestId('audit-row').first();
  await expect(row).toContainText('PROCESSED → FAILED');
  await expect(row).toContainText(`card declined ${marker}`);
  await expect(row).toContainText(operator.username);
  await expect(page.getByLabel('Action')).toHaveValue('status_change');
  await expect(page.getByLabel('Intent id')).toHaveValue(intent.id);

  // Filter by actor through the form: the URL carries it, and a fresh visit to that URL shows the same rows.
  await page.goto('/audit');
  await expectConsoleFields(page.getByRole('form', { name: 'Audit filters' }));
  await page.getByLabel('Actor').fill(operator.username);
  await page.getByRole('button', { name: 'Apply' }).click();
  await expect(page).toHaveURL(new RegExp(`actor=${operator.username}`));
  const shared = page.url();
  const rows = page.getByTestId('audit-row');
  await expect(rows.first()).toContainText(operator.username);
  const count = await rows.count();
  await page.goto(shared);
  await expect(page.getByTestId('audit-row')).toHaveCount(count);
  await expect(page.getByTestId('audit-row').first()).toContainText(short(intent.id));
});

async function signedInPage(browser: Browser, baseURL: string, role: Role) {
  const context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  await sessionFor(context, baseURL, [role]);
  return { context, page: await context.newPage() };
}

test('the audit page shows security events next to intent actions, pages with Older, and opens for every role', async ({ browser, baseURL }) => {
  const actor = uniqueMarker('auditor');
  for (let i = 0; i < 55; i++) await recordAuthEvent({ action: 'auth.sign_in', actor, subject: actor, ip: '10.0.0.7' });
  await recordAuthEvent({ action: 'user.roles_changed', actor, subject: 'kim', details: { from: ['viewer'], to: ['viewer', 'oncall'] } });

  const roles: Role[] = ['viewer', 'operator', 'reviewer', 'oncall', 'admin'];
  for (const role of roles) {
    const { context, page } = await signedInPage(browser, baseURL!, role);
    await page.goto(`/audit?actor=${actor}`);
    await expect(page.getByRole('heading', { name: 'Audit', level: 1 })).toBeVisible();
    await expect(page.getByTestId('audit-row').first()).toContainText('User roles changed');
    await expect(page.getByTestId('audit-row').first()).toContainText('roles: viewer → viewer, on-call');
    if (role === 'viewer') {
      await expect(page.getByTestId('audit-row')).toHaveCount(50);
      await page.getByRole('link', { name: 'Older →' }).click();
      await expect(page.getByTestId('audit-row')).toHaveCount(6);
      await expect(page.getByRole('link', { name: 'Older →' })).toHaveCount(0);
      await page.getByRole('link', { name: '← Newest' }).click();
      await expect(page.getByTestId('audit-row')).toHaveCount(50);
    }
    await context.close();
  }
});

test('a bad filter in a link says what is wrong instead of failing the page', async ({ page, context, baseURL }) => {
  await useSessionOf(context, baseURL!, ['viewer']);
  await page.goto('/audit?intent=not-an-id');
  await expect(page.getByRole('alert').filter({ hasText: 'intent must be' })).toContainText('intent must be a UUID or its first 8 or more characters, as the console shows them');
});

test('screenshot: the audit page with reasons, bulk and Locks actions', async ({ page, context, baseURL }) => {
  await page.setViewportSize({ width: 1366, height: 768 });
  const marker = uniqueMarker('shot');
  const a = await seedIntent('NORMALIZED', { order: marker });
  await useSessionOf(context, baseURL!, ['operator']);
  await page.goto(`/intents/${a.id}`);
  await page.getByTestId('status-reason').fill('customer confirmed by phone');
  await page.getByRole('button', { name: 'Move to PROCESSED' }).click();
  await expect(page.getByTestId('intent-status')).toHaveText('PROCESSED');
  await page.goto('/audit');
  await expect(page.getByTestId('audit-row').first()).toBeVisible();
  await screenshot(page, 'audit');
});
