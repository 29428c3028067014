import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { testWorkers } from './test/workers-count';

// Unit tests sit beside the code (lib/**/*.test.ts); integration tests (test/) run against one throw-away embedded
// PostgreSQL that globalSetup starts. They reset the database between tests, so each worker gets its own database
// (a copy of the migrated template) and runs its files one after another.
//
// A worker's files share one process and one module graph (isolate: false): importing the app's modules once per
// worker instead of once per file saves most of the suite's start-up time. So a file leaves the process as it found
// it: settings through vi.stubEnv (test/settings.ts), globals through vi.stubGlobal, spies restored, and what it
// opened or started closed in its afterAll (test/setup.ts closes what the app's modules open on their own).
export default defineConfig({
  resolve: { alias: { '@': fileURLToPath(new URL('.', import.meta.url)) } },
  test: {
    include: ['lib/**/*.test.ts', 'components/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup.ts'],
    maxWorkers: testWorkers(),
    isolate: false,
    unstubEnvs: true,
    unstubGlobals: true,
    testTimeout: 60_000,
    // As the browser suite does in CI: a test that fails once and passes on its retry is reported, not hidden.
    retry: process.env.CI ? 1 : 0,
    hookTimeout: 120_000,
    env: { BRIDGE_ENV: 'development' },
    coverage: {
      provider: 'v8',
      include: ['lib/**/*.ts'],
      exclude: ['lib/**/*.test.ts'],
      reporter: ['text-summary', 'json-summary', 'html'],
      reportsDirectory: 'coverage',
      reportOnFailure: true,
      // The engine's modules are held at 90 % of their lines and branches, each group as a whole (a glob's files
      // are summed; perFile is off). They hold for the whole suite (`npm run test:unit`): a coverage run of a few
      // files measures only what those files reach and fails them.
      thresholds: {
        // The commands and their SQL callers, with the SQLSTATE table they branch on.
        'lib/{intents/{commands,deadlock,idempotency,statements,row-waits,together},db/sqlstate}.ts': { lines: 90, branches: 90 },
        'lib/leases/{postgres,redis,service,fencing,token,events}.ts': { lines: 90, branches: 90 },
        'lib/pipeline/{bridges,lock,repository,run,writer}.ts': { lines: 90, branches: 90 },
        // Workers' claims: claiming, settling, the pause switch and what the Workers page reads.
        'lib/workers/{queries,repository,control}.ts': { lines: 90, branches: 90 },
      },
    },
  },
});
