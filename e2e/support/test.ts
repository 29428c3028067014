import { test as base, expect, type Browser, type BrowserContext, type Page, type Response } from '@playwright/test';

/**
 * `@playwright/test` for the console's browser tests: every spec imports from here. The one difference is that a
 * page's `goto` and `reload` return only once the console's page has hydrated (`data-hydrated="true"` on <html>,
 * set by components/shell/HydrationMark.tsx). Before that the server's HTML is on screen but React has not attached
 * its handlers yet, so a click on a button that runs client code does nothing, and the test would wait in vain for
 * what the click should have done. Forms bound to server actions work before hydration; most buttons do not.
 *
 * This covers the test's own `page` and every page of a context a test opens itself (`browser.newContext()`).
 * A navigation the page makes by itself through a full load — a plain GET form's submit — is not a `goto`: after
 * one, call `expectHydrated(page)` before clicking. Links (`next/link`) and server actions navigate inside the
 * hydrated page and need nothing.
 */
export * from '@playwright/test';

/** Waits until React has hydrated the document the page shows. */
export async function expectHydrated(page: Page): Promise<void> {
  await expect(page.locator('html'), 'the page hydrates (its buttons work)').toHaveAttribute('data-hydrated', 'true');
}

/** A document the console rendered (HTML); not a file, an API answer or a same-document navigation (null). */
function isConsolePage(response: Response | null): response is Response {
  return response !== null && (response.headers()['content-type'] ?? '').startsWith('text/html');
}

const watched = new WeakSet<Page>();

/** Contexts opened with JavaScript off (`scriptlessContext`): their pages never hydrate, and are not waited for. */
const scriptless = new WeakSet<BrowserContext>();

/**
 * A context whose pages run none of the console's code: what a person sees, and what their forms send, before the
 * page's code has loaded (or when it fails to load).
 */
export async function scriptlessContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext({ javaScriptEnabled: false });
  scriptless.add(context);
  return context;
}

function waitForHydrationOnNavigation(page: Page): void {
  if (watched.has(page)) return;
  watched.add(page);
  const goto = page.goto.bind(page);
  const reload = page.reload.bind(page);
  page.goto = async (url, options) => {
    const response = await goto(url, options);
    if (isConsolePage(response) && !scriptless.has(page.context())) await expectHydrated(page);
    return response;
  };
  page.reload = async (options) => {
    const response = await reload(options);
    if (isConsolePage(response) && !scriptless.has(page.context())) await expectHydrated(page);
    return response;
  };
}

function watchContext(context: BrowserContext): void {
  for (const page of context.pages()) waitForHydrationOnNavigation(page);
  context.on('page', waitForHydrationOnNavigation);
}

export const test = base.extend({
  // The test's own page: marked here rather than through its context's 'page' event, so it holds however
  // Playwright came by the page (a reused context hands over a page it already had).
  page: async ({ page }, use) => {
    waitForHydrationOnNavigation(page);
    await use(page);
  },
  // Contexts a test opens itself, and the pages in them.
  browser: [
    async ({ browser }, use) => {
      browser.on('context', watchContext);
      await use(browser);
      browser.off('context', watchContext);
    },
    { scope: 'worker' },
  ],
});
