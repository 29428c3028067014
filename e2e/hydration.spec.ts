import { expect, test, type Page } from './support/test';
import { useSessionOf } from './auth';

/**
 * The console says when a page has hydrated (`data-hydrated` on <html>, components/shell/HydrationMark.tsx) without
 * upsetting React's hydration, and the tests' `goto` returns only once it has (e2e/support/test.ts), for the test's
 * own page and for a page in a context the test opens itself.
 */
const markOf = (page: Page) => page.locator('html').getAttribute('data-hydrated');

test('a page marks itself hydrated with no hydration mismatch, and stays marked through a client navigation', async ({ page, context, baseURL, browser }) => {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  await useSessionOf(context, baseURL!, ['viewer']);

  // The mark is the browser's to set: the server's HTML never carries it.
  const served = await (await page.request.get('/audit')).text();
  expect(served).not.toMatch(/<html[^>]*data-hydrated/);

  await page.goto('/audit');
  // With JavaScript on, the notice for browsers without it is not shown.
  await expect(page.getByText('This console needs JavaScript')).toHaveCount(0);
  // Read once, not awaited: goto itself returned only after hydration.
  expect(await markOf(page)).toBe('true');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workers' }).click();
  await expect(page).toHaveURL(/\/workers$/);
  await expect(page.getByRole('heading', { name: 'Workers', level: 1 })).toBeVisible();
  expect(await markOf(page)).toBe('true');
  await page.reload();
  expect(await markOf(page)).toBe('true');
  // React reports a mismatch as a console error in development and as a page error (minified #418) in production.
  expect(problems.filter((p) => /hydrat|Minified React error #(418|423|425)/i.test(p))).toEqual([]);

  const theirs = await browser.newContext();
  try {
    await useSessionOf(theirs, baseURL!, ['viewer']);
    const other = await theirs.newPage();
    await other.goto('/audit');
    expect(await markOf(other)).toBe('true');
  } finally {
    await theirs.close();
  }
});
