import { describe, expect, it } from 'vitest';
import { envSchema, environmentNote } from '@/lib/env';

/** Safer defaults: a console on a real database is not assumed to be a laptop's. */
describe('environment defaults', () => {
  it('says nothing when BRIDGE_ENV is set', () => {
    expect(environmentNote({ BRIDGE_ENV: 'staging', DATABASE_URL: 'postgres://db/x' } as unknown as NodeJS.ProcessEnv)).toBeNull();
  });

  it('runs as production, and says so, with DATABASE_URL and no BRIDGE_ENV', () => {
    expect(environmentNote({ DATABASE_URL: 'postgres://db/x' } as unknown as NodeJS.ProcessEnv)).toMatch(/production \(Secure cookies, replay off\)/);
  });

  it('is development on the embedded database', () => {
    expect(environmentNote({} as unknown as NodeJS.ProcessEnv)).toMatch(/development/);
    expect(envSchema.parse({}).BRIDGE_ENV).toBe('development');
  });
});
