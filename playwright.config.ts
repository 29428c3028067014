import { existsSync } from 'node:fs';
import { defineConfig, devices } from '@playwright/test';

/**
 * Browser tests against a production build. `e2e/global-setup.ts` starts everything they need — a throw-away
 * embedded PostgreSQL, the migrations, `next build` when the build is missing or stale, the console's server (`scripts/serve.ts`, as `npm run serve`) on a free port —
 * and hands the server's URL and the database's URL to the test workers through the environment (Playwright
 * starts `webServer` *before* globalSetup, so a server that needs the database cannot be a `webServer`).
 *
 * Knobs: E2E_BASE_URL + DATABASE_URL run against a server you started yourself; E2E_SKIP_BUILD=1 uses the build
 * as it is; E2E_BRIDGE_ENV picks the environment the server runs as (default development); CHROMIUM_PATH points at a
 * browser. Chromium: the one on the machine (/usr/bin/chromium), else Playwright's own where installed.
 */
const chromiumPath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p && existsSync(p));

export default defineConfig({
  testDir: 'e2e',
  testMatch: '**/*.spec.ts',
  outputDir: 'test-results',
  globalSetup: './e2e/global-setup.ts',
  // One console and one database for the run: tests seed their own uniquely named data, so two workers are safe;
  // more would only fight over two cores with the server.
  workers: 2,
  fullyParallel: false,
  forbidOnly: !!process.env.CI,
  retries: process.env.CI ? 1 : 0,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  reporter: process.env.CI ? [['list'], ['html', { open: 'never' }]] : [['list']],
  use: {
    // Set by global setup before the workers start (workers read this file again, with its environment).
    baseURL: process.env.E2E_BASE_URL,
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    // A laptop screen: the size the console is designed for.
    viewport: { width: 1440, height: 900 },
    launchOptions: chromiumPath ? { executablePath: chromiumPath } : {},
  },
  projects: [
    { name: 'chromium', testIgnore: /soak\.spec\.ts$/, use: { ...devices['Desktop Chrome'], viewport: { width: 1440, height: 900 } } },
    // The soak measures the server's handles and memory against a baseline: it runs alone, after everything else
    // (`npx playwright test e2e/soak.spec.ts --no-deps` runs it by itself; SOAK_SECONDS sets its length).
    { name: 'soak', testMatch: /soak\.spec\.ts$/, dependencies: ['chromium'] },
  ],
});
