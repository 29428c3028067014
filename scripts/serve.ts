/**
 * The console's HTTP server: the front door (lib/http/gate.ts), which refuses what Next would answer with a 500 or
 * read whole before our code runs, then the JSON API answered by the console's own router, driven by the operations
 * table (lib/http/api-node.ts; docs/DEPLOY.md says why), and everything else — pages, server actions, assets — by
 * Next.js's own request handler.
 * `npm start` and the test harnesses (scripts/next-server.ts) run this instead of `next start`; it serves the same
 * production build.
 *
 * Environment: PORT (3000), HOST (127.0.0.1), and the console's own settings (lib/env.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import next from 'next';
import { createGatedServer, type GateOptions } from '../lib/http/gate';
import { engineEventsWritten } from '../lib/intents/engine-events';
import { flushOutcomes } from '../lib/intents/outcomes';

const root = resolve(import.meta.dirname, '..');

async function main() {
  const port = Number(process.env.PORT ?? 3000);
  const hostname = process.env.HOST || '127.0.0.1';
  const options: GateOptions = {
    trustProxy: process.env.TRUST_PROXY === 'true',
    trustedOrigins: (process.env.AUTH_TRUSTED_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean),
  };
  const app = next({ dev: false, dir: root, hostname, port });
  const handle = app.getRequestHandler();
  await app.prepare();
  // Loaded once Next is prepared: the API's modules use Next's public server helpers (NextResponse), which expect the
  // request context storage Next sets up when it starts.
  const { createApiDoor } = await import('../lib/http/api-node');
  const api = createApiDoor({ hostname, port });
  console.log(`[server] JSON API: ${api.operations} operations on ${api.paths} paths served directly by the console's router; pages through Next`);
  const answerFailure = (req: IncomingMessage, res: ServerResponse, err: unknown) => {
    console.error(`[server] unhandled error for ${req.method} ${req.url?.slice(0, 200)}:`, err);
    if (!res.headersSent) {
      res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ error: { code: 'internal_error', message: 'The server failed to handle this request; nothing was applied by it.' } }));
    } else res.destroy();
  };

  // What the front door let through (lib/http/gate.ts): the JSON API to its router, anything else to Next.
  const server = createGatedServer(options, (req, res) => api.serve(req, res) ?? handle(req, res), answerFailure);
  // Slow or idle clients cannot hold sockets open for ever (a request's headers within 20 s, each request within 60 s;
  // event streams are responses, not requests, and are unaffected).
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
  server.listen(port, hostname, () => {
    console.log(`[server] listening on http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${port}`);
  });

  // For memory tests (the browser suite's soak): a full garbage collection on SIGUSR2, so what the process still holds
  // can be told from garbage V8 has not collected yet. Off unless asked for. The line it logs once done is what the
  // test waits for: nothing orders a signal's handling against the requests the test sends next.
  if (process.env.BRIDGE_GC_ON_SIGUSR2 === '1') {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let collections = 0;
    process.on('SIGUSR2', () => {
      gc();
      console.log(`[server] full garbage collection ${++collections} done (SIGUSR2)`);
    });
  }

  // Housekeeping (instrumentation.ts) flushes and exits on SIGTERM/SIGINT; without it, close and exit here. The JSON
  // API runs on this script's own copy of the console's modules (loaded here, not from the build), whose outcome
  // counts are buffered for up to a second: they are written first, then housekeeping flushes the build's and exits.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const housekeeping = process.listeners(signal);
    process.removeAllListeners(signal);
    process.once(signal, () => {
      Promise.all([flushOutcomes(), engineEventsWritten()])
        .catch((err: unknown) => console.error('[server] final flush of the API’s outcome counts failed:', err))
        .finally(() => {
          if (housekeeping.length) for (const listener of housekeeping) listener(signal);
          else server.close(() => process.exit(0));
        });
    });
  }
}

main().catch((err: unknown) => {
  console.error('[server] failed to start:', err);
  process.exit(1);
});
