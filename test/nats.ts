import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './wait';

/**
 * NATS for the relay tests: a throw-away `nats-server -js -sd <tmpdir>` when Debian's nats-server is installed
 * (.ci/run installs it), otherwise the server at NATS_URL, otherwise nothing (the tests say loudly that they skip).
 * A throw-away server can be stopped and started again on the same port and storage: the outage test needs that.
 */
const BINARIES = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'];
export const natsBinary = BINARIES.find((b) => existsSync(b));
export const natsMode: 'binary' | 'url' | null = natsBinary ? 'binary' : process.env.NATS_URL ? 'url' : null;

if (!natsMode) {
  console.warn('\n!!! NATS relay tests SKIPPED: no nats-server binary (apt-get install nats-server) and no NATS_URL set !!!\n');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Every nats-server this process started and that still runs. A harness that ends without disposing of its server
 * (an uncaught error, process.exit in a hurry, Ctrl-C) still takes them down on the way out.
 */
const running = new Set<ChildProcess>();
let exitHook = false;
function stopAllOnExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const c of running) c.kill('SIGKILL');
  });
}

export type TestNats = { url: string; stop: () => Promise<void>; start: () => Promise<void>; dispose: () => Promise<void>; restartable: boolean };

export async function startTestNats(): Promise<TestNats> {
  if (natsMode === 'url') {
    const noop = async () => undefined;
    return { url: process.env.NATS_URL!, stop: noop, start: noop, dispose: noop, restartable: false };
  }
  stopAllOnExit();
  const dir = mkdtempSync(join(tmpdir(), 'bridge-nats-'));
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    // Starting a server that already runs does nothing. A second nats-server on the same port would fail to bind
    // and exit while the port still answers (the first one's), so it would look started, replace the first in
    // `child`, and leave the first running after dispose: an orphan per run.
    if (child && child.exitCode === null) return;
    const c = spawn(natsBinary!, ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
    child = c;
    running.add(c);
    c.once('exit', () => running.delete(c));
    await eventually(`nats-server to accept on ${port}`, async () => {
      if (c.exitCode !== null) throw new Error(`nats-server exited (${c.exitCode}) before accepting on ${port}`);
      return accepting(port);
    }, { everyMs: 20 });
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    start,
    stop,
    restartable: true,
    dispose: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
