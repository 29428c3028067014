import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { getRouteMatcher } from 'next/dist/shared/lib/router/utils/route-matcher';
import { getRouteRegex } from 'next/dist/shared/lib/router/utils/route-regex';
import { getSortedRoutes } from 'next/dist/shared/lib/router/utils/sorted-routes';
import { describe, expect, it } from 'vitest';
import { CommandRoutes, readRouteEntries, routeEntry, routerWork } from './route-entries';

/** Every route handler's URL pattern in this app, as `next build` names them (`/api/intents/[id]/status`). */
function appRoutePatterns(): string[] {
  const appDir = join(import.meta.dirname, '..', '..', 'app');
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name === 'route.ts') found.push('/' + relative(appDir, dir).split(sep).join('/'));
    }
  };
  walk(appDir);
  return found;
}

/** Next's own answer: the first of its sorted routes whose pattern matches the path. */
function nextChoice(patterns: string[], path: string): string | null {
  for (const pattern of getSortedRoutes(patterns)) {
    if (getRouteMatcher(getRouteRegex(pattern))(path)) return pattern;
  }
  return null;
}

const UUID = '0b6c1f62-6a57-4f4e-9d3a-2f1a4c9e8d10';

describe('command routes', () => {
  const patterns = appRoutePatterns();
  const routes = new CommandRoutes(patterns.map((p) => routeEntry(p, `app${p}/route.js`)).filter((e) => e !== null));

  it('knows the API routes a command can reach, and leaves the catch-all to Next', () => {
    const api = patterns.filter((p) => p.startsWith('/api/'));
    expect(api).toContain('/api/intents/[id]/status');
    expect(api).toContain('/api/[...path]');
    expect(routeEntry('/api/[...path]', 'x.js')).toBeNull();
    expect(routeEntry('/api/[[...rest]]', 'x.js')).toBeNull();
    expect(routeEntry('/intents', 'x.js')).toBeNull();
    expect(routes.match('POST', `/api/intents/${UUID}/status`)?.file).toBe('app/api/intents/[id]/status/route.js');
  });

  it('picks the route Next would pick for every path a route pattern or a sibling name can make', () => {
    // Each pattern's dynamic segments filled with an id, and with every literal segment name the app uses (so a
    // literal sibling such as /api/intents/bulk-status meets the dynamic /api/intents/[id]); each also one segment
    // longer and shorter. Where Next's first match is the catch-all (or nothing), the table must answer null.
    const literals = [...new Set(patterns.flatMap((p) => p.split('/')).filter((s) => s && !s.startsWith('[')))];
    const paths = new Set<string>();
    for (const pattern of patterns.filter((p) => p.startsWith('/api/'))) {
      const segments = pattern.slice(1).split('/');
      const fills = [UUID, 'orders:42', ...literals];
      for (const fill of fills) {
        const path = '/' + segments.map((s) => (s.startsWith('[') ? fill : s)).join('/');
        paths.add(path);
        paths.add(`${path}/extra`);
        paths.add(path.split('/').slice(0, -1).join('/') || '/');
      }
    }
    let compared = 0;
    for (const path of paths) {
      if (!path.startsWith('/api/')) continue;
      const next = nextChoice(patterns, path);
      const expected = next && !next.includes('[...') ? next : null;
      expect({ path, route: routes.match('POST', path)?.pathname ?? null }).toEqual({ path, route: expected });
      compared++;
    }
    expect(compared).toBeGreaterThan(500);
  });

  it('takes commands only, and leaves anything Next would decode or normalise to Next', () => {
    const status = `/api/intents/${UUID}/status`;
    expect(routes.match('POST', `${status}?dryRun=1`)?.pathname).toBe('/api/intents/[id]/status');
    for (const method of ['PUT', 'PATCH', 'DELETE']) expect(routes.match(method, status)).not.toBeNull();
    for (const method of ['GET', 'HEAD', 'OPTIONS', undefined]) expect(routes.match(method, status)).toBeNull();
    for (const url of [
      `${status}/`, // trailing slash: Next redirects
      `/api/intents/${UUID.slice(0, 8)}%2D${UUID.slice(9)}/status`, // an escape: Next decodes
      `/api//intents/${UUID}/status`, // repeated slash: Next redirects
      `/api/intents\\${UUID}/status`, // backslash: Next redirects
      `/api/intents/../intents/${UUID}/status`, // dot segments: URL parsing resolves them
      `/api/intents/./${UUID}/status`,
      `/api/intents/${UUID} /status`,
      '/api',
      '/intents',
      undefined,
    ]) {
      expect({ url, route: routes.match('POST', url) }).toEqual({ url, route: null });
    }
  });
});

describe("Next's router has work to do", () => {
  const quiet = { basePath: '', headers: [], redirects: [{ internal: true }], rewrites: { beforeFiles: [], afterFiles: [], fallback: [] } };

  it('not in this build shape: the trailing-slash redirect is Next’s own', () => {
    expect(routerWork(quiet, { middleware: {} }, { functions: { '/api/events': {} } })).toBeNull();
  });

  it('as soon as next.config.js or a middleware gives it some, and then no command goes direct', () => {
    expect(routerWork({ ...quiet, basePath: '/console' }, {}, {})).toMatch(/basePath/);
    expect(routerWork({ ...quiet, i18n: { locales: ['en'] } }, {}, {})).toMatch(/locales/);
    expect(routerWork({ ...quiet, headers: [{}] }, {}, {})).toMatch(/headers/);
    expect(routerWork({ ...quiet, redirects: [{ internal: true }, {}] }, {}, {})).toMatch(/redirects/);
    expect(routerWork({ ...quiet, rewrites: { beforeFiles: [], afterFiles: [{}], fallback: [] } }, {}, {})).toMatch(/rewrites/);
    expect(routerWork({ ...quiet, rewrites: [{}] }, {}, {})).toMatch(/rewrites/);
    expect(routerWork(quiet, { middleware: { '/': {} } }, {})).toMatch(/middleware/);
    expect(routerWork(quiet, {}, { functions: { '/_middleware': {} } })).toMatch(/middleware/);
  });

  it('reads the build’s manifests', () => {
    const dist = mkdtempSync(join(tmpdir(), 'bridge-dist-'));
    try {
      mkdirSync(join(dist, 'server'));
      const write = (path: string, value: unknown) => writeFileSync(join(dist, path), JSON.stringify(value));
      write('routes-manifest.json', quiet);
      write('server/middleware-manifest.json', { middleware: {} });
      write('server/functions-config-manifest.json', { functions: {} });
      write('server/app-paths-manifest.json', {
        '/api/intents/[id]/status/route': 'app/api/intents/[id]/status/route.js',
        '/api/[...path]/route': 'app/api/[...path]/route.js',
        '/intents/page': 'app/intents/page.js',
      });
      write('app-path-routes-manifest.json', { '/api/intents/[id]/status/route': '/api/intents/[id]/status', '/api/[...path]/route': '/api/[...path]', '/intents/page': '/intents' });
      expect(readRouteEntries(dist)).toEqual({ entries: [{ pathname: '/api/intents/[id]/status', file: 'app/api/intents/[id]/status/route.js', segments: ['api', 'intents', null, 'status'] }], off: null });
      write('routes-manifest.json', { ...quiet, basePath: '/console' });
      expect(readRouteEntries(dist)).toEqual({ entries: [], off: 'a basePath is configured' });
    } finally {
      rmSync(dist, { recursive: true, force: true });
    }
  });
});
