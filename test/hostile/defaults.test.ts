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

/** The documented way to run the console in production goes through the front door (lib/http/gate.ts). */
describe('the production server', () => {
  it('`npm run serve` is the gated server, and the deployment docs use it rather than bare `next start`', async () => {
    const { readFileSync } = await import('node:fs');
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.serve).toMatch(/scripts\/serve\.ts/);
    // The harnesses and `npm start` run the server with serverArgs: production gets the same Node flags.
    const { serverNodeFlags } = await import('../../scripts/next-server');
    for (const flag of serverNodeFlags) expect(pkg.scripts.serve.split(' ')).toContain(flag);
    expect(readFileSync('scripts/serve.ts', 'utf8')).toMatch(/= createGatedServer\(/);
    for (const doc of ['docs/DEPLOY.md', 'README.md']) {
      const text = readFileSync(doc, 'utf8');
      expect(text, doc).toContain('npm run serve');
      // `next start` may be named to warn against it, but no table of processes may list it as the command.
      expect(text, doc).not.toMatch(/^\|[^\n]*`next start`/m);
    }
  });
});

/**
 * The long-running scripts stop gracefully on a signal only when their own process receives it: tsx's command line
 * runs a script in a child, relays signals to it and SIGKILLs it when it does not acknowledge within tens of
 * milliseconds (docs/DEVELOPMENT.md, Scripts).
 */
describe('scripts that stop on a signal', () => {
  it('run in Node itself with tsx as a loader, not under the tsx command line', async () => {
    const { readFileSync } = await import('node:fs');
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    for (const name of ['start', 'worker', 'relay', 'serve']) {
      expect(pkg.scripts[name], name).toMatch(/(^|\s)node (--[\w-]+(=\S+)? )*--import tsx scripts\/\w+\.ts$/);
    }
  });
});
