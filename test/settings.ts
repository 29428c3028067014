import { afterAll, beforeAll, beforeEach, vi } from 'vitest';
import { forgetDedupStore } from '@/lib/dedup/store';
import { forgetEnv } from '@/lib/env';
import { forgetLeaseBackend } from '@/lib/leases/service';

/** The configuration is read again, and so are the backends chosen from it. */
function rereadConfiguration(): void {
  forgetEnv();
  forgetLeaseBackend();
  forgetDedupStore();
}

/**
 * Runs the calling test file with these settings. They are stubbed (vi.stubEnv) before the file's hooks and again
 * before each case, because the config's unstubEnvs undoes every stub before each case; when the file ends they are
 * undone, so the files run after it in the same worker read the configuration they would read on their own.
 */
export function withSettings(settings: Record<string, string>): void {
  const apply = () => {
    for (const [name, value] of Object.entries(settings)) vi.stubEnv(name, value);
    rereadConfiguration();
  };
  beforeAll(apply);
  beforeEach(apply);
  afterAll(() => {
    vi.unstubAllEnvs();
    rereadConfiguration();
  });
}
