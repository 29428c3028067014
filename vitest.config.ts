import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { testWorkers } from './test/workers-count';

// Unit tests sit beside the code (lib/**/*.test.ts); integration tests (test/) run against one throw-away embedded
// PostgreSQL that globalSetup starts. They reset the database between tests, so each worker gets its own database
// (a copy of the migrated template) and runs its files one after another.
export default defineConfig({
  resolve: { alias: { '@': fileURLToPath(new URL('.', import.meta.url)) } },
  test: {
    include: ['lib/**/*.test.ts', 'components/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup.ts'],
    maxWorkers: testWorkers(),
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { BRIDGE_ENV: 'development' },
  },
});
