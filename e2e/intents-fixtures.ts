import { randomBytes } from 'node:crypto';
import { expect, type Page } from '@playwright/test';
import { createIntent, updateIntentStatus } from '../lib/intents/commands';
import type { IntentStatus } from '@/lib/shared/intent-states';
import type { Intent } from '@/lib/shared/intent-types';

/**
 * Intents for browser tests, made through the engine itself (same audit trail and versions as the console's own),
 * each run stamped with a unique marker in the payload so tests can search for exactly their data.
 */
const seeder = { name: 'e2e-seed' };

const PATH: Record<IntentStatus, IntentStatus[]> = {
  RECEIVED: [],
  NORMALIZED: ['NORMALIZED'],
  PROCESSED: ['NORMALIZED', 'PROCESSED'],
  CORRECTED: ['NORMALIZED', 'PROCESSED', 'CORRECTED'],
  COMPLETED: ['NORMALIZED', 'PROCESSED', 'COMPLETED'],
  FAILED: ['NORMALIZED', 'FAILED'],
};

export function uniqueMarker(prefix = 'e2e'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

export async function seedIntent(status: IntentStatus, payload: Record<string, unknown>, source = 'e2e-partner'): Promise<Intent> {
  let intent = await createIntent({ payload, source }, seeder);
  for (const step of PATH[status]) intent = (await updateIntentStatus({ id: intent.id, status: step }, seeder)).intent;
  return intent;
}

export const short = (id: string) => id.slice(0, 8);

/** The row of an intent in the Intents table. */
export const rowOf = (page: Page, id: string) => page.locator(`tr[data-intent-id="${id}"]`);

/** Waits until the page's live stream is connected (so a change made now reaches it). */
export async function expectLive(page: Page): Promise<void> {
  await expect(page.getByTestId('live-indicator')).toHaveAttribute('data-state', 'live');
}

export async function screenshot(page: Page, name: string): Promise<void> {
  // The sidebar is pinned to the window (sticky, one window high), its theme switch at the window's foot. A capture of
  // the whole page at the window's own height draws it as it stands at the top, so the switch lands mid-page; with the
  // window as tall as the page for the capture, the picture shows it where a person sees it, at the bottom.
  await page.evaluate(() => window.scrollTo(0, 0));
  const viewport = page.viewportSize();
  const pageHeight = await page.evaluate(() => document.documentElement.scrollHeight);
  if (viewport && pageHeight > viewport.height) await page.setViewportSize({ width: viewport.width, height: pageHeight });
  try {
    await page.screenshot({ path: `test-results/screenshots/${name}.png`, fullPage: true });
  } finally {
    if (viewport) await page.setViewportSize(viewport);
  }
}

/**
 * Watches the page for `text` to appear in the element matching `selector` (MutationObserver, in the page), so a
 * test can measure when a change reached the screen to the millisecond rather than at its assertion's poll.
 * Returns a function giving the Date.now() at which it appeared (0 until then).
 */
export async function watchFor(page: Page, selector: string, text: string): Promise<() => Promise<number>> {
  const key = `watch-${Math.random().toString(36).slice(2)}`;
  await page.evaluate(
    ({ key, selector, text }) => {
      const w = window as unknown as Record<string, number>;
      w[key] = 0;
      const seen = () => document.querySelector(selector)?.textContent?.includes(text) ?? false;
      if (seen()) w[key] = Date.now();
      const observer = new MutationObserver(() => {
        if (!w[key] && seen()) {
          w[key] = Date.now();
          observer.disconnect();
        }
      });
      observer.observe(document.body, { subtree: true, childList: true, characterData: true });
    },
    { key, selector, text },
  );
  return () => page.evaluate((k) => (window as unknown as Record<string, number>)[k], key);
}
