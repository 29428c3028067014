import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { isApiCommand } from './gate';

/**
 * API commands handed straight to their route's built entrypoint.
 *
 * Every route that `next build` emits exports `handler(req, res, ctx)`: the function Next's own server calls once it
 * has decided which route a request is for, and the interface Next documents for platforms that route requests
 * themselves ("Invoking Entrypoints" in Next's adapter documentation). Before that call Next's server runs its
 * router — rewrites, redirects, middleware, public files, locales, the dynamic-route scan, done twice over (the
 * router server, then the render server) — none of which has anything to do for an API command here, and which
 * costs about as much of the server's one JavaScript thread as the command itself (docs/bench/).
 *
 * So the console's server (scripts/serve.ts) looks a command (POST, PUT, PATCH, DELETE under /api/) up in the table
 * of the build's API routes and calls that route's handler; the route code, its request and response objects, its
 * error handling and instrumentation are Next's own, exactly as they run behind Next's router. Whatever this table
 * is not certain of — reads (they keep Next's compression), a path with percent-escapes, backslashes, empty or dot
 * segments, a trailing slash, a path only the catch-all answers — goes to Next's full handler as before.
 *
 * Node and the build's own files, plus Next's list of its internal headers; the matching is unit-tested against
 * Next's own route sorting, and a browser test drives both halves through the real server.
 */

/**
 * Characters a path may hold to be matched here: RFC 3986's path characters without percent-escapes. A path with
 * anything else (an escape, a backslash, a space) is left to Next, which decodes and normalises it its own way.
 */
const PLAIN_PATH = /^\/api(?:\/[A-Za-z0-9\-._~!$&'()*+,;=:@]+)+$/;

export type RouteEntry = {
  /** The URL pattern, as Next names it: `/api/intents/[id]/status`. */
  pathname: string;
  /** The built entrypoint, relative to the build's `server/` folder. */
  file: string;
  /** Each segment: its literal text, or null for a dynamic `[param]` segment. */
  segments: (string | null)[];
};

/** A route a command can be handed to: under /api/, with static or single-segment dynamic parts only. */
export function routeEntry(pathname: string, file: string): RouteEntry | null {
  if (!pathname.startsWith('/api/')) return null;
  const parts = pathname.slice(1).split('/');
  const segments: (string | null)[] = [];
  for (const part of parts) {
    // Catch-all and optional catch-all segments answer what no other route does (the API's 404 envelope); Next's
    // router is the one to decide that.
    if (part.startsWith('[[') || part.startsWith('[...')) return null;
    // Route groups and parallel routes never appear in a route handler's URL pattern; if one ever did, Next decides.
    if (part.startsWith('(') || part.startsWith('@')) return null;
    segments.push(part.startsWith('[') && part.endsWith(']') ? null : part);
  }
  return { pathname, file, segments };
}

type RoutesManifest = {
  basePath?: string;
  i18n?: unknown;
  headers?: unknown[];
  redirects?: { internal?: boolean }[];
  rewrites?: unknown[] | { beforeFiles?: unknown[]; afterFiles?: unknown[]; fallback?: unknown[] };
};

/**
 * Why Next's router would have something to do for an API command in this build, or null when it has nothing: a
 * base path, locales, configured headers, redirects or rewrites, or a middleware (proxy). Any of them turns the
 * direct path off as a whole, so adding one to next.config.js can never be skipped by it.
 */
export function routerWork(routes: RoutesManifest, middleware: { middleware?: object }, functions: { functions?: object }): string | null {
  if (routes.basePath) return 'a basePath is configured';
  if (routes.i18n) return 'locales (i18n) are configured';
  if (routes.headers?.length) return 'next.config.js sets headers';
  if (routes.redirects?.some((r) => !r.internal)) return 'next.config.js sets redirects';
  const rewrites = Array.isArray(routes.rewrites) ? routes.rewrites : [...(routes.rewrites?.beforeFiles ?? []), ...(routes.rewrites?.afterFiles ?? []), ...(routes.rewrites?.fallback ?? [])];
  if (rewrites.length) return 'next.config.js sets rewrites';
  if (Object.keys(middleware.middleware ?? {}).length || Object.keys(functions.functions ?? {}).some((k) => k.includes('middleware'))) return 'the build has a middleware (proxy)';
  return null;
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;

/**
 * The build's API route entrypoints, from the manifests Next's own server reads: the app paths manifest (route →
 * built file) and the app path routes manifest (route → URL pattern). `off` says why there are none to use.
 */
export function readRouteEntries(distDir: string): { entries: RouteEntry[]; off: string | null } {
  const off = routerWork(
    readJson(join(distDir, 'routes-manifest.json')),
    readJson(join(distDir, 'server', 'middleware-manifest.json')),
    readJson(join(distDir, 'server', 'functions-config-manifest.json')),
  );
  if (off) return { entries: [], off };
  const files = readJson<Record<string, string>>(join(distDir, 'server', 'app-paths-manifest.json'));
  const patterns = readJson<Record<string, string>>(join(distDir, 'app-path-routes-manifest.json'));
  const entries: RouteEntry[] = [];
  for (const [route, file] of Object.entries(files)) {
    if (!route.endsWith('/route')) continue;
    const pathname = patterns[route];
    const entry = pathname === undefined ? null : routeEntry(pathname, file);
    if (entry) entries.push(entry);
  }
  return { entries, off: null };
}

/**
 * Next's precedence among routes that match the same path: at the first segment where they differ, a literal
 * segment wins over a dynamic one (`/api/intents/bulk-status` over `/api/intents/[id]`).
 */
function morePrecise(a: RouteEntry, b: RouteEntry): boolean {
  for (let i = 0; i < a.segments.length; i++) {
    const aStatic = a.segments[i] !== null;
    const bStatic = b.segments[i] !== null;
    if (aStatic !== bStatic) return aStatic;
  }
  return false;
}

export class CommandRoutes {
  private readonly bySegmentCount = new Map<number, RouteEntry[]>();

  constructor(entries: RouteEntry[]) {
    for (const entry of entries) {
      const list = this.bySegmentCount.get(entry.segments.length) ?? [];
      list.push(entry);
      this.bySegmentCount.set(entry.segments.length, list);
    }
  }

  /** The route whose entrypoint answers this command, or null when Next's own router is to decide. */
  match(method: string | undefined, url: string | undefined): RouteEntry | null {
    if (!url || !isApiCommand(method, url)) return null;
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (!PLAIN_PATH.test(path)) return null;
    const parts = path.slice(1).split('/');
    // "." and ".." are resolved away by URL parsing before Next routes; a path holding them is Next's to normalise.
    if (parts.some((p) => p === '.' || p === '..')) return null;
    let best: RouteEntry | null = null;
    for (const entry of this.bySegmentCount.get(parts.length) ?? []) {
      if (entry.segments.every((s, i) => s === null || s === parts[i]) && (!best || morePrecise(entry, best))) best = entry;
    }
    return best;
  }
}

type RouteHandler = (req: IncomingMessage, res: ServerResponse, ctx: { waitUntil?: (p: Promise<unknown>) => void; requestMeta?: Record<string, unknown> }) => Promise<unknown>;

/** Where the server listens, for the request URL a route handler sees (the same one Next's router gives it). */
export type Listening = { hostname: string; port: number };

/**
 * Calls the route's built entrypoint the way Next's server does once routing is done. Before it, what Next's
 * router would have done to such a request: its internal headers are dropped (a client must not steer Next with
 * them), the `x-forwarded-*` defaults are filled in, and the request's absolute URL is recorded.
 */
export function createEntryDispatcher(distDir: string, listening: Listening) {
  const load = createRequire(join(distDir, 'server', 'noop.js'));
  const handlers = new Map<string, RouteHandler>();
  // Next's own list of the headers only it may set, so the list is never copied here.
  const { filterInternalHeaders } = load('next/dist/server/lib/server-ipc/utils') as { filterInternalHeaders: (headers: IncomingMessage['headers']) => void };
  const host = listening.hostname.includes(':') ? `[${listening.hostname}]` : listening.hostname;
  const waitUntil = (p: Promise<unknown>) => {
    p.catch((err: unknown) => console.error('[server] work a route handler left running failed:', err));
  };

  const ignore = () => undefined;

  return (entry: RouteEntry, req: IncomingMessage, res: ServerResponse): Promise<unknown> => {
    let handler = handlers.get(entry.file);
    if (!handler) {
      handler = (load(join(distDir, 'server', entry.file)) as { handler: RouteHandler }).handler;
      handlers.set(entry.file, handler);
    }
    // A body cut off by the client must not take the process down with an unhandled 'error' (Next's router listens too).
    req.on('error', ignore);
    filterInternalHeaders(req.headers);
    // Next's two readings of the scheme, as it makes them: its render server's for the x-forwarded-proto default, its
    // router's for the request URL.
    const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true;
    const forwardedProto = req.headers['x-forwarded-proto'];
    const https = typeof forwardedProto === 'string' ? forwardedProto === 'https' : encrypted;
    req.headers['x-forwarded-host'] ??= req.headers.host ?? listening.hostname;
    req.headers['x-forwarded-port'] ??= String(listening.port);
    req.headers['x-forwarded-proto'] ??= https ? 'https' : 'http';
    req.headers['x-forwarded-for'] ??= req.socket.remoteAddress;
    const protocol = encrypted || (typeof forwardedProto === 'string' && forwardedProto.includes('https')) ? 'https' : 'http';
    return handler(req, res, {
      waitUntil,
      requestMeta: { initURL: `${protocol}://${host}:${listening.port}${req.url}`, initProtocol: protocol },
    });
  };
}
